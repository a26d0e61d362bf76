"""The SAS general poll exception codes and what each one means for RAPS.

The product needs only a few facts from a slot machine: a game was played (and
for how much), the machine is online, open, out of service or gone.  Every code
the GSA SAS 6.02 standard defines (and the SAS 6.03 meter-change and
games/denominations codes A0-A2) is listed here so that a trace decodes fully,
with its `Effect` on the floor; codes that change nothing are still counted and
logged.  docs/sas.md renders this table for technicians.

`RTE_FIELDS` gives the data an exception carries in a real-time event message
(address, FF, code, data, CRC); in a plain general poll reply every exception is
one byte with no data.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Effect(StrEnum):
    """What the host poller does with an exception."""

    NONE = "none"  # counted and logged only
    NO_ACTIVITY = "no_activity"
    GAME_START = "game_start"  # a wager: opens a game (RTE: credits wagered, coin-in meter)
    GAME_END = "game_end"  # closes the open game (RTE: win) -> GamePlayed
    DOOR_OPEN = "door_open"  # -> MachineStatusChanged door_open
    DOOR_CLOSED = "door_closed"  # -> back to online when nothing else holds
    POWER_LOST = "power_lost"  # -> offline
    POWER_APPLIED = "power_applied"  # -> online; meters are re-read (reconciliation)
    MENU_ENTERED = "menu_entered"  # attendant/operator menu: not playable -> out_of_service
    MENU_EXITED = "menu_exited"
    OUT_OF_SERVICE = "out_of_service"  # -> out_of_service until play resumes
    METERS_RESET = "meters_reset"  # lifetime meters zeroed: new reconciliation baseline
    BUFFER_OVERFLOW = "buffer_overflow"  # exceptions were lost: re-read meters now
    METER_CHANGE = "meter_change"  # SAS 6.03 A0: meters about to change: read them first
    GAMES_CHANGED = "games_changed"  # SAS 6.03 A2: games/denominations changed: re-read them
    HANDPAY = "handpay"  # 51: read the handpay (long poll 1B); no floor effect


class Kind(StrEnum):
    BCD = "bcd"
    BINARY = "binary"


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    size: int
    kind: Kind


@dataclass(frozen=True, slots=True)
class ExceptionInfo:
    code: int
    name: str
    effect: Effect
    meaning: str
    door: str | None = None  # which door an open/close event concerns


_B, _N = Kind.BCD, Kind.BINARY

# Data carried by an exception in a real-time event message (SAS 6.02 §12.5).
RTE_FIELDS: dict[int, tuple[Field, ...]] = {
    0x4F: (
        Field("country_code", 1, _B),
        Field("denomination_code", 1, _B),
        Field("bill_meter", 4, _B),
    ),
    0x7C: (
        Field("multiplier", 1, _N),
        Field("multiplied_win", 4, _B),
        Field("tax_status", 1, _N),
        Field("bonus_credits", 4, _B),
    ),
    0x7E: (
        Field("credits_wagered", 2, _B),
        Field("coin_in_meter", 4, _B),
        Field("wager_type", 1, _N),
        Field("progressive_group", 1, _N),
    ),
    0x7F: (Field("win_credits", 4, _B),),
    0x88: (Field("reel", 1, _N), Field("physical_stop", 1, _N)),
    0x8A: (Field("game_number", 2, _B), Field("recall_index", 2, _B)),
    0x8B: (Field("card", 1, _N),),
    0x8C: (Field("game_number", 2, _B),),
}


# code name                          effect          door      meaning for RAPS
_ROWS = """
00 no_activity                   no_activity     -         nothing to report; the link is alive
11 slot_door_opened              door_open       slot      main door open: machine not playable
12 slot_door_closed              door_closed     slot      main door closed
13 drop_door_opened              door_open       drop      drop door open
14 drop_door_closed              door_closed     drop      drop door closed
15 card_cage_opened              door_open       card_cage logic board cage open
16 card_cage_closed              door_closed     card_cage logic board cage closed
17 ac_power_applied              power_applied   -         powered up: online, meters re-read
18 ac_power_lost                 power_lost      -         machine lost power: offline
19 cashbox_door_opened           door_open       cashbox   cashbox door open
1A cashbox_door_closed           door_closed     cashbox   cashbox door closed
1B cashbox_removed               none            -         cashbox removed (drop collection)
1C cashbox_installed             none            -         cashbox installed
1D belly_door_opened             door_open       belly     belly door open
1E belly_door_closed             door_closed     belly     belly door closed
1F idle_waiting_for_player       no_activity     -         idle, waiting for player (obsolete)
20 general_tilt                  none            -         tilt: logged, play resumes by itself
21 coin_in_tilt                  none            -         coin in tilt
22 coin_out_tilt                 none            -         coin out tilt
23 hopper_empty                  none            -         hopper empty
24 extra_coin_paid               none            -         extra coin paid
25 diverter_malfunction          none            -         diverter malfunction
27 cashbox_full                  none            -         cashbox full
28 bill_jam                      none            -         bill jam
29 bill_acceptor_failure         none            -         bill acceptor hardware failure
2A reverse_bill                  none            -         reverse bill detected
2B bill_rejected                 none            -         bill rejected
2C counterfeit_bill              none            -         counterfeit bill detected
2D reverse_coin_in               none            -         reverse coin in detected
2E cashbox_near_full             none            -         cashbox near full
31 cmos_ram_error_recovered      none            -         memory error (data recovered)
32 cmos_ram_error_lost           none            -         memory error (no data recovered)
33 cmos_ram_bad_device           none            -         memory error (bad device)
34 eeprom_data_error             none            -         EEPROM data error
35 eeprom_bad_device             none            -         EEPROM bad device
36 eprom_version_changed         none            -         EPROM checksum changed (version changed)
37 eprom_bad_checksum            none            -         EPROM bad checksum compare
38 part_eprom_version_changed   none            -         partitioned EPROM version changed
39 part_eprom_bad_checksum      none            -         partitioned EPROM bad checksum
3A memory_error_reset            none            -         memory error reset by operator
3B low_backup_battery            none            -         low backup battery
3C operator_changed_options      none            -         configuration changed: identity re-read
3D ticket_printed                none            -         cash out ticket printed
3E handpay_validated             none            -         handpay validated
3F validation_id_not_configured  none            -         validation id not configured
40 reel_tilt                     none            -         reel tilt
41 reel_1_tilt                   none            -         reel 1 tilt
42 reel_2_tilt                   none            -         reel 2 tilt
43 reel_3_tilt                   none            -         reel 3 tilt
44 reel_4_tilt                   none            -         reel 4 tilt
45 reel_5_tilt                   none            -         reel 5 tilt
46 reel_disconnected             none            -         reel mechanism disconnected
47 bill_1                        none            -         $1 bill accepted (money in, not play)
48 bill_5                        none            -         $5 bill accepted
49 bill_10                       none            -         $10 bill accepted
4A bill_20                       none            -         $20 bill accepted
4B bill_50                       none            -         $50 bill accepted
4C bill_100                      none            -         $100 bill accepted
4D bill_2                        none            -         $2 bill accepted
4E bill_500                      none            -         $500 bill accepted
4F bill_accepted                 none            -         bill in (RTE: country, denom, meter)
50 bill_200                      none            -         $200 bill accepted
51 handpay_pending               handpay         -         handpay pending: 1B read, player stays
52 handpay_reset                 none            -         handpay reset
53 no_progressive_info           none            -         no progressive broadcast for 5 s
54 progressive_win               none            -         progressive win paid by machine
55 handpay_cancelled             none            -         player cancelled the handpay request
56 sas_progressive_level_hit     none            -         SAS progressive level hit
57 system_validation_request     none            -         system validation request
60 printer_comm_error            none            -         printer communication error
61 printer_paper_out             none            -         printer paper out
66 cashout_pressed               none            -         cash out button pressed
67 ticket_inserted               none            -         ticket inserted (money in, not play)
68 ticket_transfer_complete      none            -         ticket transfer complete
69 aft_transfer_complete         none            -         AFT transfer done
6A aft_host_cashout_request      none            -         AFT request for host cashout
6B aft_host_cashout_win_request  none            -         AFT request for host to cash out win
6C aft_register_request          none            -         AFT request to register
6D aft_registration_acknowledged none            -         AFT registration acknowledged
6E aft_registration_cancelled    none            -         AFT registration cancelled
6F game_locked                   none            -         game locked for a transfer
70 exception_buffer_overflow     buffer_overflow -         exceptions lost: meters re-read now
71 change_lamp_on                none            -         service light on (attendant called)
72 change_lamp_off               none            -         service light off
74 printer_paper_low             none            -         printer paper low
75 printer_power_off             none            -         printer power off
76 printer_power_on              none            -         printer power on
77 replace_printer_ribbon        none            -         replace printer ribbon
78 printer_carriage_jammed       none            -         printer carriage jammed
79 coin_in_lockout_malfunction   none            -         coin in lockout malfunction
7A soft_meters_reset             meters_reset    -         meters zeroed: new baseline, 1F 51 read
7B bill_totals_reset             none            -         bill validator period totals reset
7C legacy_bonus_awarded          none            -         legacy bonus (8A) paid
7E game_started                  game_start      -         game started: wager, coin-in after bet
7F game_ended                    game_end        -         the game ended: win -> one GamePlayed
80 hopper_full                   none            -         hopper full
81 hopper_low                    none            -         hopper level low
82 attendant_menu_entered        menu_entered    -         attendant menu open -> out_of_service
83 attendant_menu_exited         menu_exited     -         attendant menu left
84 operator_menu_entered         menu_entered    -         operator menu open -> out_of_service
85 operator_menu_exited          menu_exited     -         operator/self-test menu left
86 out_of_service                out_of_service  -         taken out of service by an attendant
87 draw_cards_requested          none            -         player requested draw cards (RTE)
88 reel_stopped                  none            -         reel N stopped (RTE)
89 credit_wagered                none            -         coin/credit wagered (RTE)
8A game_recall_displayed         none            -         game recall entry displayed
8B card_held                     none            -         poker card held/not held (RTE)
8C game_selected                 none            -         game selected on a multi-game machine
8E component_list_changed        none            -         software component list changed
8F authentication_complete       none            -         component authentication complete
98 power_off_card_cage_access    none            -         card cage opened while powered off
99 power_off_slot_door_access    none            -         slot door opened while powered off
9A power_off_cashbox_door_access none            -         cashbox door opened while powered off
9B power_off_drop_door_access    none            -         drop door opened while powered off
A0 meter_change_pending          meter_change    -         meters about to change: read them now
A1 meter_change_cancelled        none            -         the pending meter change was cancelled
A2 enabled_games_denoms_changed  games_changed   -         games/denominations changed: 1F, 51, 0F
"""


def _table() -> dict[int, ExceptionInfo]:
    out: dict[int, ExceptionInfo] = {}
    for line in _ROWS.strip().splitlines():
        code, name, effect, door, meaning = line.split(maxsplit=4)
        c = int(code, 16)
        out[c] = ExceptionInfo(c, name, Effect(effect), meaning, None if door == "-" else door)
    return out


EXCEPTIONS: dict[int, ExceptionInfo] = _table()

GAME_STARTED = 0x7E
GAME_ENDED = 0x7F
NO_ACTIVITY = 0x00


def info(code: int) -> ExceptionInfo | None:
    """The table entry for `code`, or None for a code SAS 6.02 does not define."""
    return EXCEPTIONS.get(code)


def rte_data_length(code: int) -> int:
    """Bytes of data after the code in a real-time event message."""
    return sum(f.size for f in RTE_FIELDS.get(code, ()))
