/* The correction page: cards by taps on the tablet's pad (static/tablet/
 * pad.js). Tap a card's place (one of the six fields), then a rank and a
 * suit: the code goes into the field, and the place moves on to the next
 * empty one in dealing order. The fields stay plain form fields (typing a
 * code still works; without JavaScript the page is the form it was). */
(function () {
  "use strict";
  var ORDER = ["p1", "b1", "p2", "b2", "p3", "b3"];
  var form = document.querySelector("form[data-correction]");
  var pad = document.getElementById("correction-pad");
  if (!form || !pad || !window.ChemmyPad) return;
  var fields = {};
  ORDER.forEach(function (n) { fields[n] = form.querySelector('input[name="' + n + '"]'); });
  var selected = null;

  function select(name) {
    selected = name;
    ORDER.forEach(function (n) {
      var on = n === name;
      fields[n].classList.toggle("selected", on);
      if (on) fields[n].setAttribute("aria-current", "true");
      else fields[n].removeAttribute("aria-current");
    });
  }

  function nextEmpty(after) {
    var start = ORDER.indexOf(after) + 1;
    for (var i = start; i < ORDER.length; i++) {
      if (!fields[ORDER[i]].value) return ORDER[i];
    }
    return after;
  }

  ORDER.forEach(function (n) {
    // a tap on the place selects it without bringing up a keyboard
    fields[n].setAttribute("inputmode", "none");
    fields[n].addEventListener("focus", function () { select(n); });
    fields[n].addEventListener("click", function () { select(n); });
  });
  window.ChemmyPad.cards(pad, function (code) {
    if (!selected) return;
    fields[selected].value = code;
    fields[selected].dispatchEvent(new Event("input", { bubbles: true }));
    select(nextEmpty(selected));
  });
  document.getElementById("slot-clear").addEventListener("click", function () {
    if (selected) fields[selected].value = "";
  });
  var firstEmpty = ORDER.filter(function (n) { return !fields[n].value; })[0];
  select(firstEmpty || "p1");
})();
