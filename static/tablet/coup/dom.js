/* The coup screen's few DOM helpers, and its alert line. */

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children || []) if (c) node.append(c);
  return node;
}

let lockArmed = false; // Lock tapped once with coups of one's own waiting

export function showAlert(text) {
  const a = $("alert");
  a.textContent = text;
  a.hidden = false;
}

export function hideAlert() {
  $("alert").hidden = true;
  lockArmed = false;
}

/** Lock was tapped with coups of one's own waiting: the alert says so, and
 *  a second tap locks (unless something else is done first). */
export function armLock() {
  lockArmed = true;
}

export function isLockArmed() {
  return lockArmed;
}
