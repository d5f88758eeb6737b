/* The card pad (templates/tablet/_pad.html): a rank key, then a suit key,
 * make a card. Shared by the tablet's coup screen (coup/cards.js decides where a
 * card goes, from the tableau) and the floor's correction page (the card goes
 * to the place the pit boss picked).
 *
 *   ChemmyPad.bind(pad, {rank: fn(r), suit: fn(s)})  the raw taps
 *   ChemmyPad.show(pad, pendingRank)                  the pressed rank, armed suits
 *   ChemmyPad.cards(pad, onCard)                      rank + suit -> onCard("KS")
 *
 * A classic script, not a module: the correction page loads it as one; the
 * coup screen's modules find it on window (coup.js).
 */
(function () {
  "use strict";

  function bind(pad, on) {
    pad.querySelectorAll("[data-rank]").forEach(function (b) {
      b.addEventListener("click", function () { on.rank(b.dataset.rank); });
    });
    pad.querySelectorAll("[data-suit]").forEach(function (b) {
      b.addEventListener("click", function () { on.suit(b.dataset.suit); });
    });
  }

  function show(pad, pendingRank) {
    pad.querySelectorAll("[data-rank]").forEach(function (k) {
      k.setAttribute("aria-pressed", k.dataset.rank === pendingRank ? "true" : "false");
    });
    pad.querySelectorAll("[data-suit]").forEach(function (k) {
      k.classList.toggle("armed", !!pendingRank);
    });
  }

  function cards(pad, onCard) {
    var pending = null;
    bind(pad, {
      rank: function (r) { pending = r; show(pad, pending); },
      suit: function (s) {
        if (!pending) return;
        var code = pending + s;
        pending = null;
        show(pad, null);
        onCard(code);
      },
    });
    show(pad, null);
  }

  window.ChemmyPad = { bind: bind, show: show, cards: cards };
})();
