//! The process-wide cleanup registry: every resource the rig creates registers how to undo it,
//! and a SIGINT/SIGTERM handler or a panic hook undoes everything still registered.
//!
//! Each guard (loop device, zram device, mount, temp file, tracefs instance) calls [`register`]
//! when it creates its resource and [`run`] in its `Drop`. Taking the action out of the registry
//! under the lock decides who runs it, so a guard dropping while a signal arrives never undoes
//! twice. Actions run last-registered first (unmount before detaching the loop device under it,
//! detach before removing the backing file).
//!
//! Signals are turned into bytes on a self-pipe by an async-signal-safe handler; a watcher thread
//! reads the pipe, runs the cleanup outside signal context (where locks and allocation are
//! allowed) and exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM). The signal
//! handlers are installed the first time anything registers; the panic hook only when the
//! program asks ([`install_panic_hook`]), because a library must not turn a caught panic in one
//! thread (a failing test among others) into the teardown of every resource in the process.
//!
//! A resource is created and registered inside [`creating`]: the signal watcher waits for any
//! creation under way to register before it undoes everything, and a creation that starts after
//! the signal blocks until the process exits. Without that, a SIGINT arriving between a tracefs
//! instance's `mkdir` and its `register` would leave the instance behind, named after a dead
//! process.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once, RwLock};

/// Writes a line to stderr and ignores a failure. A signal's cleanup must go on when stderr is
/// gone (a closed pipe: `layoutlab ... | head`, or a parent that died first), where `eprintln!`
/// panics: the watcher thread then died before cleaning up and the main thread waited for it
/// forever, holding every device (seen on 2026-11-27: a test child whose test was killed).
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

type Action = Box<dyn FnOnce() + Send + 'static>;

struct Entry {
    id: u64,
    label: String,
    action: Action,
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// Held shared while a resource is created and registered, exclusively by the signal watcher
/// from just before its cleanup until the process exits.
static CREATING: RwLock<()> = RwLock::new(());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static SIGNAL_PIPE_WRITE_FD: AtomicI32 = AtomicI32::new(-1);
static SIGNALS_ONCE: Once = Once::new();
/// Set by the watcher before it cleans up after a signal; the process is about to `_exit`.
static SIGNAL_CAUGHT: AtomicBool = AtomicBool::new(false);
/// Set, under the registry's lock, when the cleanup before exit takes the list.
static CLEANING: AtomicBool = AtomicBool::new(false);
static PANIC_ONCE: Once = Once::new();
/// The signal watcher thread's name.
const WATCHER: &str = "rig-signal-cleanup";

/// A handle to one registered cleanup action.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CleanupId(u64);

fn registry() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while holding the lock must not stop the cleanup of everything else.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers `action` to undo the resource described by `label`; installs the signal handlers
/// on first use. The action runs exactly once: from [`run`], [`run_all`], a signal or the panic
/// hook, whichever comes first — or never, after [`forget`].
///
/// Once a signal's cleanup has started running the registry, another thread (experiments run
/// policies at once) may still create a resource outside [`creating`]: it is undone at once,
/// here, instead of being registered where nobody would run it before the process exits.
/// (Inside [`creating`] this cannot happen: the cleanup waits for the step to finish, and
/// then runs what it registered.)
pub fn register(label: impl Into<String>, action: impl FnOnce() + Send + 'static) -> CleanupId {
    install_signal_handlers();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let entry = Entry {
        id,
        label: label.into(),
        action: Box::new(action),
    };
    // Checked under the registry's lock, which the cleanup holds while it sets `CLEANING` and
    // takes the list: an entry is either in the list it takes or undone here, never neither.
    let late = {
        let mut reg = registry();
        if CLEANING.load(Ordering::SeqCst) {
            Some(entry)
        } else {
            reg.push(entry);
            None
        }
    };
    if let Some(entry) = late {
        (entry.action)();
    }
    CleanupId(id)
}

/// Runs `create`, which makes a resource and [`register`]s its undo, so that a SIGINT/SIGTERM
/// cannot fall between the two: the signal's cleanup waits for `create` to return, and a
/// `create` that would start after the signal never starts (the process exits first). Keep
/// `create` short and do not nest calls (the lock is not re-entrant once a signal is waiting).
pub fn creating<T>(create: impl FnOnce() -> T) -> T {
    let _shared = CREATING.read().unwrap_or_else(|p| p.into_inner());
    create()
}

fn take(id: &CleanupId) -> Option<Entry> {
    let mut reg = registry();
    let pos = reg.iter().position(|e| e.id == id.0)?;
    Some(reg.remove(pos))
}

/// Runs the action of `id` now if nobody ran it yet. Returns whether it ran here.
pub fn run(id: &CleanupId) -> bool {
    match take(id) {
        Some(entry) => {
            (entry.action)();
            true
        }
        None => false,
    }
}

/// Removes the action of `id` without running it (the owner undid the resource itself).
pub fn forget(id: &CleanupId) -> bool {
    take(id).is_some()
}

/// Runs every registered action, last registered first; returns how many ran.
pub fn run_all() -> usize {
    let entries: Vec<Entry> = std::mem::take(&mut *registry());
    run_entries(entries)
}

/// Runs every registered action before the process exits (a signal or a panic): from now on
/// [`register`] undoes a new resource at once instead of listing it.
fn run_all_for_exit() -> usize {
    let entries: Vec<Entry> = {
        let mut reg = registry();
        CLEANING.store(true, Ordering::SeqCst);
        std::mem::take(&mut *reg)
    };
    run_entries(entries)
}

/// Runs `entries` last registered first, and returns how many there were.
fn run_entries(entries: Vec<Entry>) -> usize {
    let count = entries.len();
    for entry in entries.into_iter().rev() {
        // One action that panics must not stop the others, nor (after a signal) change the
        // exit status: the panic hook leaves a panic during a signal's cleanup to us.
        let label = entry.label;
        let action = entry.action;
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(action)).is_err() {
            note!("layoutlab: the cleanup of {label} panicked; continuing with the rest");
        }
    }
    count
}

/// Labels of the resources still registered, oldest first.
pub fn pending() -> Vec<String> {
    registry().iter().map(|e| e.label.clone()).collect()
}

extern "C" fn on_signal(signal: libc::c_int) {
    // Only async-signal-safe work here: one write(2) of one byte.
    let fd = SIGNAL_PIPE_WRITE_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = signal as u8;
        unsafe {
            libc::write(fd, &byte as *const u8 as *const libc::c_void, 1);
        }
    }
}

/// Installs the SIGINT/SIGTERM handlers (idempotent). Called by [`register`]; call it yourself
/// to have it in place before the first resource exists.
pub fn install_signal_handlers() {
    SIGNALS_ONCE.call_once(|| {
        let mut fds = [-1; 2];
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            note!(
                "layoutlab-rig: cannot create the signal pipe ({}); Ctrl-C will not clean up",
                std::io::Error::last_os_error()
            );
            return;
        }
        let (read_fd, write_fd) = (fds[0], fds[1]);
        SIGNAL_PIPE_WRITE_FD.store(write_fd, Ordering::Relaxed);
        let spawned = std::thread::Builder::new()
            .name(WATCHER.into())
            .spawn(move || watch_signals(read_fd));
        if let Err(e) = spawned {
            note!("layoutlab-rig: cannot start the signal watcher ({e}); Ctrl-C will not clean up");
            return;
        }
        for signal in [libc::SIGINT, libc::SIGTERM] {
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                    note!(
                        "layoutlab-rig: sigaction({signal}) failed: {}",
                        std::io::Error::last_os_error()
                    );
                }
            }
        }
    });
}

fn watch_signals(read_fd: libc::c_int) {
    loop {
        let mut byte = 0u8;
        let n = unsafe { libc::read(read_fd, &mut byte as *mut u8 as *mut libc::c_void, 1) };
        if n == 1 {
            let signal = byte as i32;
            let name = if signal == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            SIGNAL_CAUGHT.store(true, Ordering::SeqCst);
            // Wait for a creation under way to register its resource; hold the lock until
            // `_exit` so no new one starts.
            let _exclusive = CREATING.write().unwrap_or_else(|p| p.into_inner());
            let labels = pending();
            note!(
                "layoutlab: caught {name}; cleaning up {} resource(s) the rig created",
                labels.len()
            );
            run_all_for_exit();
            unsafe { libc::_exit(128 + signal) };
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return;
        }
    }
}

/// Installs a panic hook that prints the panic as usual, undoes every registered resource and
/// exits with status 101 (Rust's status for a panic). For programs (the CLI), not libraries:
/// it ends the whole process on the first panic in any thread.
pub fn install_panic_hook() {
    PANIC_ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            if signal_caught() {
                // A signal's cleanup is under way and ends the process with 128 + the signal.
                // On its own thread the panic unwinds into that cleanup's catch; any other
                // thread (most likely failing because its device was just torn down) waits
                // for the exit instead of racing it with 101.
                if std::thread::current().name() != Some(WATCHER) {
                    loop {
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                }
                return;
            }
            // Under a test harness's output capture `previous` printed into the capture, which
            // this exit throws away: say what and where on the real stderr too (`note!`).
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            note!(
                "layoutlab: exiting with status 101 after a panic at {at}: {}",
                info.payload_as_str().unwrap_or_default()
            );
            let count = run_all_for_exit();
            if count > 0 {
                note!("layoutlab: panic; cleaned up {count} resource(s) the rig created");
            }
            std::process::exit(101);
        }));
    });
}

/// Installs both the signal handlers and the panic hook; the CLI calls this first thing.
/// Whether a SIGINT/SIGTERM was caught and its cleanup is running (the process will exit
/// with 128 + the signal when it is done).
pub fn signal_caught() -> bool {
    SIGNAL_CAUGHT.load(Ordering::SeqCst)
}

/// Ends the process with `code` after undoing whatever is still registered. If a signal was
/// caught, its cleanup is already running on the watcher thread (and the main thread's error
/// is most likely a consequence of it: its loop device was just detached): wait for it to
/// finish and exit with 128 + the signal instead, so a main thread returning early can never
/// cut the signal cleanup short.
pub fn exit(code: i32) -> ! {
    if signal_caught() {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    run_all();
    std::process::exit(code)
}

/// Installs both: the signal handlers and the panic hook. For programs (the CLI), as
/// [`install_panic_hook`] says; a library wants [`install_signal_handlers`] alone.
pub fn install() {
    install_signal_handlers();
    install_panic_hook();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn an_action_runs_exactly_once_whoever_asks() {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let id = register("counter", move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert!(run(&id));
        assert!(!run(&id));
        assert!(!forget(&id));
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn forget_drops_without_running() {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let id = register("never", move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert!(forget(&id));
        assert!(!run(&id));
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }
}
