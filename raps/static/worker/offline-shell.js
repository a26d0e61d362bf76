// The offline shell both page workers share (handheld-sw.js, dispatch-sw.js): served
// appended to each (raps.pages), so each is one script. The page's worker defines what
// differs: SHELL and DATA (its caches), OWN_CACHES (its caches' names, any version),
// SHELL_WAIT_MS, SHELL_FILES, isData(path) (the reads it may answer offline) and
// save(path, response) (how a read is kept).

self.addEventListener("install", (ev) => {
  ev.waitUntil((async () => {
    if (ev.addRoutes) {
      // commands and the stream go straight to the network, without this worker
      await ev.addRoutes([
        { condition: { requestMethod: "POST" }, source: "network" },
        { condition: { urlPattern: { pathname: "/api/stream" } }, source: "network" },
      ]).catch(() => { /* the fetch handler leaves them alone too */ });
    }
    const cache = await caches.open(SHELL);
    await cache.addAll(SHELL_FILES.map((path) => new Request(path, { cache: "no-store" })));
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (ev) => {
  ev.waitUntil((async () => {
    // this worker's older versions only (OWN_CACHES): the other page's worker keeps its own
    for (const name of await caches.keys()) {
      if (OWN_CACHES.test(name) && name !== SHELL && name !== DATA) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (ev) => {
  const req = ev.request;
  if (req.method !== "GET") return; // a command: the network's alone
  const url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  if (SHELL_FILES.includes(url.pathname)) ev.respondWith(shell(req, url.pathname));
  else if (isData(url.pathname)) ev.respondWith(data(req, url.pathname));
  // anything else (the stream above all): not answered here
});

// A page file: the network's answer (kept), or the saved copy when there is none in time.
async function shell(req, path) {
  const cache = await caches.open(SHELL);
  const network = fetch(req).then(async (r) => {
    if (r.ok && r.type === "basic" && !r.redirected) await cache.put(path, r.clone());
    return r;
  });
  const late = new Promise((resolve) => setTimeout(resolve, SHELL_WAIT_MS, null));
  const first = await Promise.race([network.catch(() => null), late]);
  if (first) return first;
  const saved = await cache.match(path);
  return saved || network; // nothing saved: wait for the network after all
}

// A read: always the network's answer when there is one; the saved copy only offline.
async function data(req, path) {
  let r;
  try {
    r = await fetch(req);
  } catch (e) {
    const saved = await (await caches.open(DATA)).match(path);
    if (!saved) throw e;
    const headers = new Headers(saved.headers);
    headers.set("X-RAPS-Offline", headers.get("X-RAPS-Saved-At") || "");
    return new Response(await saved.blob(), { status: 200, headers });
  }
  if (r.ok && r.type === "basic" && !r.redirected) await save(path, r.clone());
  return r;
}
