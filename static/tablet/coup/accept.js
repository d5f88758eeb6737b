/* A pit boss accepts the coups another croupier left queued on this tablet,
 * on their author's behalf: his own user name and password and a reason
 * (tables/tablet/accept.py). The coups stay their author's.
 */
import { $, showAlert } from "./dom.js";
import { authorName, device, hasId, heldRun, removeEntry } from "./queue.js";
import { csrf, flush, pauseFor, recorded } from "./send.js";
import { LANG, render, S, T, URLS } from "./state.js";
import { fmt, REFUSAL } from "./words.js";

function clock(iso) {
  return new Date(iso).toLocaleTimeString(LANG, { hour: "2-digit", minute: "2-digit" });
}

function acceptError(text) {
  const box = $("accept-error");
  box.textContent = text;
  box.hidden = false;
}

export function openAccept() {
  const run = heldRun();
  if (!run.length) return;
  const name = authorName(run[0]);
  $("accept-summary").textContent =
    run.length === 1
      ? fmt(T.accept_summary_one, { name: name, from: clock(run[0].at) })
      : fmt(T.accept_summary_many, {
          n: run.length,
          name: name,
          from: clock(run[0].at),
          to: clock(run[run.length - 1].at),
        });
  $("accept-error").hidden = true;
  $("accept-password").value = "";
  $("accept").showModal();
  $("accept-username").focus();
}

export async function sendAccept() {
  const run = heldRun();
  if (!run.length || !hasId(run[0])) return $("accept").close();
  const username = $("accept-username").value.trim();
  const password = $("accept-password").value;
  const reason = $("accept-reason").value.trim();
  if (!username || !password) return acceptError(T.accept_need_sign);
  if (!reason) return acceptError(T.accept_need_reason);
  const name = authorName(run[0]);
  const button = $("accept-send");
  button.disabled = true;
  let r;
  let data = {};
  try {
    r = await fetch(URLS.accept, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRFToken": csrf(),
        "X-Device": device(),
      },
      body: JSON.stringify({
        username: username,
        password: password,
        reason: reason,
        entered_by: run[0].user_id,
        coups: run.map((e) => ({ shoe: e.shoe, key: e.key, body: e.body })),
      }),
    });
    try {
      data = await r.json();
    } catch (e) {
      data = {};
    }
  } catch (err) {
    return acceptError(T.offline);
  } finally {
    button.disabled = false;
    $("accept-password").value = ""; // never left on the relief's tablet
  }
  if (r.ok) {
    $("accept-reason").value = "";
    $("accept").close();
    let last = null;
    for (const s of data.stored) {
      const entry = run.find((e) => e.key === s.key);
      removeEntry(s.key);
      if (s.coup.shoe === S.shoe.id) S.shoe.next_seq = Math.max(S.shoe.next_seq, s.coup.seq + 1);
      last = { entry: entry, coup: s.coup };
    }
    if (last) await recorded(last.entry, last.coup);
    const n = data.stored.length;
    showAlert(fmt(n === 1 ? T.accepted_one : T.accepted_many, { n: n, name: name, by: data.accepted_by }));
    render();
    flush(); // the relief's own coups, queued behind them
    return;
  }
  const entry = data.index !== undefined ? run[data.index] : null;
  if (r.status === 409 && entry && data["coups[" + data.index + "].expected_seq"]) {
    $("accept").close();
    await pauseFor({ kind: "moved", entry: entry, data: data });
    return;
  }
  acceptError(fmt(T.accept_refused, { detail: REFUSAL.words(r.status, data, entry && entry.body).text }));
}

export function cancelAccept() {
  $("accept-password").value = "";
  $("accept").close();
}
