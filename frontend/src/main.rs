//! The dashboard page: Leptos in the browser, reading `/api/status.json` and nothing else.
//!
//! - [`feed`]: polls the snapshot with conditional requests (a 304 costs no body).
//! - [`clock`]: one ticking `now`, so ages count up between polls.
//! - [`app`]: the verdict in words, the staleness banner, needs-you.
//! - [`view`]: the glance's sections and rows, details behind a tap.
//! - [`wire`]: reads `status.json` with the browser's JSON parser, not serde_json.

mod app;
mod clock;
mod feed;
mod view;
mod wire;

/// Talc instead of Rust's default dlmalloc: the same job in fewer bytes of WebAssembly.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

fn main() {
    let document = leptos::prelude::document();
    // The boot note stays only if the page never starts.
    if let Some(boot) = document.get_element_by_id("boot") {
        boot.remove();
    }
    leptos::mount::mount_to_body(app::App);
    // The links to the static snapshot and the last report are index.html's own (they work
    // before and without the page, and cost the WebAssembly nothing): moved below the page.
    if let (Some(links), Some(body)) = (document.get_element_by_id("links"), document.body()) {
        let _ = body.append_child(&links);
    }
}
