/* Chemmy tablet service worker ({{ version }}).
 * The coup screen and the static files are kept, network first: online the
 * tablet always shows the server's page; offline a reload gets the last copy,
 * and the page's own queue (localStorage) brings the waiting coups back.
 * Only GET requests are touched: recording a coup always goes to the network.
 */
const CACHE = "{{ version }}";
const ASSETS = [{% for a in assets %}"{{ a|escapejs }}"{% if not forloop.last %}, {% endif %}{% endfor %}];
const KEEP = /^\/tablet\/shoes\/\d+\/$/;

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(ASSETS)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim())
  );
});

self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.method !== "GET") return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  const page = req.mode === "navigate" && KEEP.test(url.pathname);
  const asset = ASSETS.includes(url.pathname);
  if (!page && !asset) return;
  event.respondWith(
    fetch(req)
      .then((res) => {
        if (res.ok && !res.redirected) {
          const copy = res.clone();
          caches.open(CACHE).then((c) => c.put(req, copy));
        }
        return res;
      })
      .catch(() => caches.match(req, { ignoreSearch: true }).then((hit) => hit || Response.error()))
  );
});
