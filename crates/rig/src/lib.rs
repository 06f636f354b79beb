//! The rig: real kernel file systems on devices it created (loop, zram), tracefs capture, guaranteed cleanup.
