#![cfg(target_arch = "wasm32")]

extern crate wasm_bindgen_test;

mod js;
mod tests;
mod util;
