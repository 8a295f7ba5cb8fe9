//! One module per subcommand, each holding its clap arguments and its flow
//! (a folder where a command has parts). A command imports no other
//! command: what several share lives beside `commands/`, under its own name
//! (`modules`, `settings`, `inputs`, `cluster`, `live`, `output`,
//! `findings`, `registry`, `verification`, `limits`, `session`); `tests/layout.rs`
//! holds it so.

pub mod annotate;
pub mod audit;
pub mod bench;
pub mod inspect;
pub mod keygen;
pub mod playground;
pub mod pull;
pub mod push;
pub mod run;
pub mod scaffold;
pub mod sign;
pub mod snapshot;
pub mod test;
pub mod verify;
