mod fetch_as_stream;
mod pipe;
mod readable_byte_stream;
mod readable_stream;
mod transform_stream;
mod writable_stream;
