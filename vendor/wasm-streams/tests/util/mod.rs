pub use byte_channel::ByteChannel;
pub use drop_observer::observe_drop;
pub use failing_sink::FailingSink;
pub use simple_channel::SimpleChannel;
pub use unhandled_error_guard::UnhandledErrorGuard;

pub mod byte_channel;
pub mod drop_observer;
pub mod failing_sink;
pub mod simple_channel;
pub mod unhandled_error_guard;
