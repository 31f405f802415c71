pub mod builders;
pub mod parser;
pub mod types;

pub use parser::ParseResult;
pub use types::*;
