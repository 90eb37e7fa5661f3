//! The dashboard page (Leptos CSR, built with trunk). Until the page is built, this placeholder
//! proves that the shared snapshot types compile for the browser target.

fn main() {
    let _ = fleetdash_model::SCHEMA_VERSION;
}
