/* Every tablet page: the service worker (so the coup screen reloads while the
 * Wi-Fi is down), and two-step confirmation buttons (no browser pop-ups: a
 * second tap within a few seconds confirms). */
(function () {
  "use strict";

  if ("serviceWorker" in navigator && document.body.dataset.sw) {
    navigator.serviceWorker
      .register(document.body.dataset.sw, { scope: "/tablet/" })
      .catch(function () {
        /* no worker (plain http on a LAN address): the queue still works */
      });
  }

  // A locked tablet keeps no copy of any table's screen (nor the coup
  // screen's kept state, coup/state.js; the queue of coups stays, under their
  // authors' names).
  if (document.body.classList.contains("lock-page")) {
    try {
      localStorage.removeItem("chemmy.tablet.state");
    } catch (e) {
      /* no storage: nothing kept */
    }
    if (window.caches) {
      caches.keys().then(function (keys) {
        keys.forEach(function (k) {
          caches.delete(k);
        });
      });
    }
  }

  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    const button = form.querySelector("button[type=submit]");
    if (!button) return;
    const label = button.textContent;
    let armed = false;
    let timer = null;
    form.addEventListener("submit", function (ev) {
      if (armed) return;
      ev.preventDefault();
      armed = true;
      button.textContent = form.dataset.confirm;
      button.classList.add("armed");
      timer = setTimeout(function () {
        armed = false;
        button.textContent = label;
        button.classList.remove("armed");
      }, 5000);
    });
    form.addEventListener("reset", function () {
      clearTimeout(timer);
    });
  });

  // Quick amounts on the bank form fill the amount field.
  document.querySelectorAll("[data-fill]").forEach(function (b) {
    b.addEventListener("click", function () {
      const target = document.getElementById(b.dataset.target);
      if (target) target.value = b.dataset.fill;
    });
  });
})();
