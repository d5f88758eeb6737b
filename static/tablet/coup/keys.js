/* A USB keypad: "9h", "kd", "10s", Enter saves, Backspace undoes, Escape
 * lets go of a rank. coup.js listens with keypad(). */
import * as C from "../chemmy.js";
import { tapRank, tapSuit, undo } from "./cards.js";
import { save } from "./save.js";
import { draft, render } from "./state.js";

let ten = false; // "1" typed: a "0" next makes a ten

export function keypad(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const t = ev.target;
  if (t && t.closest && t.closest("input, textarea, select, dialog, form")) return;
  const k = ev.key;
  if (k === "Enter") {
    ev.preventDefault();
    save();
    return;
  }
  if (k === "Backspace") {
    ev.preventDefault();
    undo();
    return;
  }
  if (k === "Escape") {
    draft.pendingRank = null;
    ten = false;
    render();
    return;
  }
  if (k.length !== 1) return;
  const ch = k.toUpperCase();
  if (ten) {
    ten = false;
    if (ch === "0") {
      tapRank("T");
      return;
    }
  }
  if (ch === "1") {
    ten = true;
    return;
  }
  if (C.RANKS.includes(ch)) tapRank(ch);
  else if (C.SUITS.includes(ch) && draft.pendingRank) tapSuit(ch);
}
