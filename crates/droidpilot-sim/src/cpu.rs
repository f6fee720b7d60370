//! CPU time, read from the kernel (`clock_gettime`): the virtual phone's own work runs on
//! the server's cores, so benches count it apart from the server's (`CommandCounts::cpu_us`).
//! Two `libc` calls; a crate for them would add a dependency for five lines. And
//! `off_runtime`: the phone's CPU-heavy work (render, PNG encode) on rayon's pool, one
//! thread per core, off the runtime's workers.

use std::time::Duration;

fn clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clock ids exist on every Linux.
    let ok = unsafe { libc::clock_gettime(id, &mut ts) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time the calling thread has used.
pub fn thread_cpu() -> Duration {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time the whole process has used, every thread counted.
pub fn process_cpu() -> Duration {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Runs `f` and returns its result with the thread CPU time it took (exact: `f` runs on
/// this thread without yielding).
pub fn on_cpu<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t0 = thread_cpu();
    let out = f();
    (out, thread_cpu().saturating_sub(t0))
}

/// Runs `f` on rayon's pool (one thread per core) and returns its result with the CPU
/// time it took there. A virtual phone's rendering and encoding is the phone's own work:
/// inline, each took a runtime worker for a millisecond or more, and every task woken
/// meanwhile (an event's delivery, a commit's reply) waited behind it. Not tokio's
/// blocking pool: it grows a thread per waiting call (500 phones, 500 threads).
///
/// A panic in `f` is caught on the pool (rayon would abort the process) and resumed
/// here, in the awaiting task, as if `f` had run inline.
pub async fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> (T, Duration) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| on_cpu(f)));
        let _ = tx.send(r);
    });
    match rx.await {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // Only if the pool dropped the job unrun (it never does while the process runs).
        Err(_) => panic!("rayon's pool dropped a virtual phone's job"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn off_runtime_returns_the_result_and_a_panic_reaches_the_caller() {
        let (v, _) = off_runtime(|| 6 * 7).await;
        assert_eq!(v, 42);
        // The panic is resumed in the awaiting task, so the task fails, not the process.
        let task = tokio::spawn(off_runtime(|| -> u8 { panic!("render bug") }));
        let err = task.await.unwrap_err();
        assert!(err.is_panic());
        let msg = err
            .into_panic()
            .downcast::<&str>()
            .map(|m| *m)
            .unwrap_or_default();
        assert_eq!(msg, "render bug");
    }

    #[test]
    fn busy_work_counts_and_sleeping_does_not() {
        // Spin until the kernel has charged this thread 5 ms (however loaded the machine).
        let (spun, busy) = on_cpu(|| {
            let t0 = thread_cpu();
            let mut spins = 0u64;
            while thread_cpu() - t0 < Duration::from_millis(5) {
                spins = std::hint::black_box(spins + 1);
            }
            spins
        });
        assert!(spun > 0 && busy >= Duration::from_millis(5), "{busy:?}");
        let (_, idle) = on_cpu(|| std::thread::sleep(Duration::from_millis(30)));
        assert!(
            idle < Duration::from_millis(5),
            "sleeping is not CPU: {idle:?}"
        );
        assert!(process_cpu() >= busy);
    }
}
