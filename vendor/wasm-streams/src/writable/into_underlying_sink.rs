use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;

use futures_util::{Sink, SinkExt};
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

pub(crate) struct IntoUnderlyingSink {
    inner: Rc<RefCell<Inner>>,
}

impl IntoUnderlyingSink {
    pub fn new(sink: Box<dyn Sink<JsValue, Error = JsValue>>) -> Self {
        IntoUnderlyingSink {
            inner: Rc::new(RefCell::new(Inner::new(sink))),
        }
    }

    // fleetdash: the JavaScript underlying sink, an object of closures around this sink, not
    // an instance of an exported class (see `IntoUnderlyingSource::into_js`). `close` and
    // `abort` take the sink, as the class's `close(self)` and `abort(self, reason)` did; a call
    // after them finds none and does nothing (the stream makes no such call).
    pub(crate) fn into_js(self) -> web_sys::UnderlyingSink {
        let this = Rc::new(RefCell::new(Some(self)));
        let js = web_sys::UnderlyingSink::new();
        let sink = this.clone();
        let write = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |chunk| {
            match sink.borrow_mut().as_mut() {
                Some(sink) => sink.write(chunk),
                None => Promise::resolve(&JsValue::undefined()),
            }
        });
        js.set_write(write.into_js_value().unchecked_ref::<Function>());
        let sink = this.clone();
        let close =
            Closure::<dyn FnMut() -> Promise>::new(move || match sink.borrow_mut().take() {
                Some(sink) => sink.close(),
                None => Promise::resolve(&JsValue::undefined()),
            });
        js.set_close(close.into_js_value().unchecked_ref::<Function>());
        let abort = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |reason| {
            match this.borrow_mut().take() {
                Some(sink) => sink.abort(reason),
                None => Promise::resolve(&JsValue::undefined()),
            }
        });
        js.set_abort(abort.into_js_value().unchecked_ref::<Function>());
        js
    }
}

#[allow(clippy::await_holding_refcell_ref)]
impl IntoUnderlyingSink {
    pub fn write(&mut self, chunk: JsValue) -> Promise {
        let inner = self.inner.clone();
        // SAFETY: We use the take-and-replace pattern in Inner::write() to ensure
        // that if a panic occurs, the sink is already taken out of the Option,
        // leaving it in a clean None state. This prevents use of corrupted state
        // after a panic is caught.
        future_to_promise(AssertUnwindSafe(async move {
            // This mutable borrow can never panic, since the WritableStream always queues
            // each operation on the underlying sink.
            let mut inner = inner.try_borrow_mut().unwrap_throw();
            inner.write(chunk).await.map(|_| JsValue::undefined())
        }))
    }

    pub fn close(self) -> Promise {
        // SAFETY: Inner::close() takes the sink before the fallible operation.
        future_to_promise(AssertUnwindSafe(async move {
            let mut inner = self.inner.try_borrow_mut().unwrap_throw();
            inner.close().await.map(|_| JsValue::undefined())
        }))
    }

    pub fn abort(self, reason: JsValue) -> Promise {
        // SAFETY: Inner::abort() just sets sink to None, no fallible operation.
        future_to_promise(AssertUnwindSafe(async move {
            let mut inner = self.inner.try_borrow_mut().unwrap_throw();
            inner.abort(reason).await.map(|_| JsValue::undefined())
        }))
    }
}

struct Inner {
    sink: Option<Pin<Box<dyn Sink<JsValue, Error = JsValue>>>>,
}

impl Inner {
    fn new(sink: Box<dyn Sink<JsValue, Error = JsValue>>) -> Self {
        Inner {
            sink: Some(sink.into()),
        }
    }

    async fn write(&mut self, chunk: JsValue) -> Result<(), JsValue> {
        // Take the sink out before the fallible/panickable operation.
        // This ensures that if a panic occurs, self.sink is already None,
        // so any subsequent call will fail cleanly instead of using corrupted state.
        let mut sink = self.sink.take().unwrap_throw();

        match sink.send(chunk).await {
            Ok(()) => {
                // Success: put the sink back for reuse
                self.sink = Some(sink);
                Ok(())
            }
            Err(err) => {
                // Error: the sink is dropped, self.sink remains None
                Err(err)
            }
        }
        // Panic: sink is dropped during unwind, self.sink remains None
    }

    async fn close(&mut self) -> Result<(), JsValue> {
        // Take ownership and close - sink is dropped after close completes
        self.sink.take().unwrap_throw().close().await
    }

    async fn abort(&mut self, _reason: JsValue) -> Result<(), JsValue> {
        // Take and drop the sink immediately
        self.sink = None;
        Ok(())
    }
}
