//! The steps every operation composes, one owner each: plan an image ([`plan`]), make it
//! ([`image`]), check it with the real e2fsck under trace ([`check`]), price a trace on the
//! run's devices ([`price`]), and turn a captured trace's tags into phases, with the CPU time
//! before and after the trace ([`phases`]).
//!
//! The model is fio's ioengines: the core owns the loop, the engines own only what differs. An
//! operation here owns its question (which population, which policies, which kernel phase to
//! run, what to report); how a plan is made and checked, how an image is written, and how
//! requests are selected by tag is written once, in these modules, and no operation calls
//! another operation for it.
//!
//! What these steps do not own: running a kernel phase under trace (`request_merging::traced_dd`
//! and each kernel operation's run body, around the rig's `window::Window`); the replay of a
//! trace itself (`layoutlab_device::replay`, which [`price`] calls).

pub mod check;
pub mod image;
pub mod phases;
pub mod plan;
pub mod price;
