// The sign-in page: posts JSON (with this page's own origin) and follows "next".
"use strict";
(() => {
  const form = document.getElementById("login");
  const error = document.getElementById("error");
  const submit = document.getElementById("submit");
  const secret = document.getElementById("secret");
  // Only a path on this very origin: one leading slash, printable ASCII, no backslash
  // (browsers drop tabs and newlines inside URLs and read "\\" as "/"), and resolving to
  // this origin. The server checks the same (raps.auth.safe_next); this is the last word.
  const sameSite = (raw) => {
    if (typeof raw !== "string" || !/^\/(?![\/\\])[\x21-\x7e]*$/.test(raw) || raw.includes("\\")) {
      return null;
    }
    let url;
    try { url = new URL(raw, location.origin); } catch (_) { return null; }
    return url.origin === location.origin ? url.pathname + url.search + url.hash : null;
  };
  const next = sameSite(new URLSearchParams(location.search).get("next"));

  document.getElementById("pin-pad").addEventListener("click", (ev) => {
    const numeric = secret.getAttribute("inputmode") === "numeric";
    if (numeric) secret.removeAttribute("inputmode");
    else secret.setAttribute("inputmode", "numeric");
    ev.target.textContent = numeric ? "Show number pad" : "Show keyboard";
    secret.focus();
  });

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    submit.disabled = true;
    submit.textContent = "Signing in…";
    try {
      const r = await fetch("/login", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({
          user: document.getElementById("user").value.trim(),
          secret: secret.value,
          next: next,
        }),
      });
      let data = {};
      try { data = await r.json(); } catch (_) { /* not JSON */ }
      if (r.ok) {
        // the handheld's offline copies belong to whoever signed in before: gone
        try {
          if (window.caches) for (const k of await caches.keys()) if (k.startsWith("raps-data")) await caches.delete(k);
        } catch (_) { /* no cache storage */ }
        location.assign(sameSite(data.next) || "/");
        return;
      }
      error.textContent = typeof data.detail === "string" ? data.detail : "Sign-in failed (" + r.status + ")";
      error.hidden = false;
      secret.value = "";
      secret.focus();
    } catch (_) {
      error.textContent = "No connection to the server. Try again.";
      error.hidden = false;
    } finally {
      submit.disabled = false;
      submit.textContent = "Sign in";
    }
  });
})();
