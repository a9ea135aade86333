//! The hook contract with Claude Code: the event read on stdin ([`payload`]), the answer
//! printed on stdout ([`answer`]), and the exit-code policy of the whole binary ([`exit`]).

pub mod answer;
pub mod exit;
pub mod payload;

pub use answer::Answer;
pub use exit::Exit;
pub use payload::{Event, Payload};
