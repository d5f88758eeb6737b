// The tableau grid editor: a tap cycles a cell D -> S -> O; a cell that
// differs from the version it was copied from is outlined.
(function () {
  "use strict";
  var NEXT = { D: "S", S: "O", O: "D" };
  function show(button, value) {
    button.textContent = value;
    button.classList.remove("D", "S", "O");
    button.classList.add(value);
    button.classList.toggle("changed", value !== button.dataset.was);
    count();
  }
  function count() {
    var out = document.getElementById("changed-count");
    if (out) out.textContent = String(document.querySelectorAll("button.tcell.changed").length);
  }
  count();
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.tcell");
    if (!button) return;
    var input = button.nextElementSibling;
    var value = NEXT[input.value] || "D";
    input.value = value;
    show(button, value);
  });
})();
