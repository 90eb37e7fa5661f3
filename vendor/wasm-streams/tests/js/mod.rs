pub use readable_stream::*;
pub use transform_stream::*;
pub use writable_stream::*;

mod readable_stream;
mod transform_stream;
mod writable_stream;
