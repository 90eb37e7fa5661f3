// The page's service worker (docs/page.md, issue 46): the page opens at once from this
// device, with the last snapshot it read, when the network or the server is gone, and says so.
// Plain JavaScript, no build tool: scripts/build-frontend writes this build's id and the files
// of its shell into the two lines below. Any new page build is a new sw.js, so the browser
// installs it in the background on the next visit; it takes over at once and drops the old
// build's cache (the visit after shows the new page).
const BUILD = "780523deea2878c6";
const SHELL = ["./", "fleetdash-frontend-b06d6aa4e7169bb8.js", "fleetdash-frontend-b06d6aa4e7169bb8_bg.wasm"];
const HOME = new URL("./", location).href;
const STATUS = HOME + "api/status.json";
// One cache per build and folder: another fleetdash under another path of the same origin
// keeps its own.
const NAME = "fleetdash " + HOME;
const CACHE = NAME + " " + BUILD;

addEventListener("install", (e) =>
  // cache.addAll fails on any answer that is not a 200 (a 401 too): no shell, no worker.
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(SHELL)).then(() => skipWaiting())));

addEventListener("activate", (e) =>
  e.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k.startsWith(NAME + " ") && k != CACHE)
      .map((k) => caches.delete(k))))
    .then(() => clients.claim())));

addEventListener("fetch", (e) => {
  const r = e.request;
  const url = r.url.split("?")[0];
  // Anything else (another origin, another path, a POST) goes to the network untouched and is
  // never kept.
  if (r.method != "GET") return;
  if (r.mode == "navigate" && (url == HOME || url == HOME + "index.html")) {
    e.respondWith(page(e));
  } else if (url == STATUS) {
    e.respondWith(status(e));
  } else if (SHELL.some((f) => url == new URL(f, HOME).href)) {
    e.respondWith(caches.match(r, { cacheName: CACHE, ignoreVary: true }).then((c) => c || fetch(r)));
  }
});

// The page: this build's shell at once (no round trip on a slow link), refreshed behind it when
// the server answers with the same build (one naming the same files); the network when none is
// kept. The server's 401 (the password changed, or the browser forgot it) drops what is kept,
// so the next visit asks the server, and the browser the password.
async function page(e) {
  const cache = await caches.open(CACHE);
  const kept = await cache.match("./", { ignoreVary: true });
  if (!kept) return fetch(e.request);
  e.waitUntil(fetch("./", { cache: "no-cache" }).then(async (n) => {
    if (n.status == 401) return forget(cache);
    const text = n.status == 200 && await n.clone().text();
    if (text && SHELL.every((f) => f == "./" || text.includes(f))) await cache.put("./", n);
  }).catch(() => {}));
  return kept;
}

// status.json: the network, with the page's own validators and deadline. A 200 is kept (only
// this file, only from here), with its schema. The first poll of a visit asks for the kept copy
// at once, naming the schema it reads (Fleetdash-Cache): it gets it, marked `Fleetdash-From:
// cache` and without the server's Date (the page does not set its clock by it), unless it is of
// another schema; the page then asks the server, which says whether it is still the last.
async function status(e) {
  const r = e.request;
  const cache = await caches.open(CACHE);
  const schema = r.headers.get("fleetdash-cache");
  const c = schema && await cache.match(STATUS, { ignoreVary: true });
  if (c && c.headers.get("fleetdash-schema") == schema) {
    const headers = new Headers(c.headers);
    headers.set("fleetdash-from", "cache");
    return new Response(c.body, { headers });
  }
  const n = await fetch(r);
  if (n.status == 200) e.waitUntil(keep(cache, n.clone()));
  if (n.status == 401) e.waitUntil(forget(cache));
  // The page's copy is still the last, but not the one kept (the page read it before this
  // worker ran): fetched once whole, to be kept.
  if (n.status == 304) {
    e.waitUntil(cache.match(STATUS, { ignoreVary: true }).then((c) =>
      c && c.headers.get("etag") == r.headers.get("if-none-match") ||
      fetch(STATUS, { cache: "no-store" }).then((f) => f.status == 200 && keep(cache, f))));
  }
  return n;
}

async function keep(cache, n) {
  const text = await n.text();
  const headers = { "content-type": "application/json", "fleetdash-schema": JSON.parse(text).schema_version };
  for (const h of ["etag", "last-modified"]) if (n.headers.has(h)) headers[h] = n.headers.get(h);
  await cache.put(STATUS, new Response(text, { headers }));
}

function forget(cache) {
  return Promise.all(["./", STATUS].map((k) => cache.delete(k)));
}
