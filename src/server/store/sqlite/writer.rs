//! The SQLite store's one writer, with pipelined group commit.
//!
//! SQLite lets one connection write at a time. So one thread owns the write connection and runs the
//! writes that queue up in one transaction, each inside its own savepoint (a write that fails is rolled
//! back alone and the others still commit), and commits them together. The commit writes the WAL but
//! does not wait for the disk (`synchronous=NORMAL`): a second thread, the syncer, makes it durable
//! with one fsync of the WAL and only then answers the group's callers. Meanwhile the writer runs the
//! writes that keep coming in a new transaction, and commits it once that fsync has ended (or its group
//! is full): one fsync still serves a whole group, and the writer no longer waits for the disk between
//! groups. (Measured by `make bench-soak`: the fsyncs were a quarter of the writer's CPU, and their
//! waits as much again.)
//!
//! A caller is never told that something is done before it is durable. Other connections can read a
//! commit during its fsync, before it is (as InnoDB's group commit lets them): a crash then loses it and
//! everything written after it, since the WAL keeps its commits in order, and none of it was answered.
//!
//! Reads do not come here: WAL readers (the store's pool) never wait for the writer.

use super::super::StoreError;
use rusqlite::Connection;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::Thread;
use tokio::sync::{mpsc, oneshot};

/// The most writes committed together: enough to absorb a burst, small enough that the first caller
/// of a group does not wait long for the last.
const MAX_GROUP: usize = 256;
/// Writes waiting beyond this make callers wait to enqueue (backpressure instead of unbounded memory).
const QUEUE: usize = 4096;

/// What the writer thread owns: the connection and whatever state writes may keep between them.
pub struct WriterContext<S> {
    pub conn: Connection,
    pub state: S,
}

/// A write, type-erased. Given the context, it runs and says whether it succeeded (so that a failure is
/// rolled back to its savepoint); given none (its group is already lost), it does not run. Either way
/// it leaves the callback that answers its caller once the group's commit is known.
type Job<S> = Box<dyn FnOnce(Option<&mut WriterContext<S>>) -> (bool, Answer) + Send>;
type Answer = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// Makes what the writer committed durable: an fsync of the WAL.
pub type Durable = Box<dyn FnMut() -> std::io::Result<()> + Send>;

pub struct Writer<S> {
    jobs: mpsc::Sender<Job<S>>,
    /// The writer thread, woken when a write comes while it waits for an fsync.
    thread: Thread,
}

/// What the writer and the syncer share.
#[derive(Default)]
struct Syncs {
    /// Groups committed whose fsync has not ended.
    unsynced: AtomicUsize,
    /// An fsync failed: what it should have made durable may not be, and the kernel may have dropped
    /// the pages it could not write, so a later fsync proves nothing. No write is taken any more.
    failed: AtomicBool,
}

impl<S: Send + 'static> Writer<S> {
    /// Starts the writer and syncer threads; `after_commit` runs on the writer after each group (see
    /// `checkpoint`), `durable` on the syncer.
    pub fn start(conn: Connection, state: S, durable: Durable, after_commit: impl Fn(&Connection) + Send + 'static) -> Result<Writer<S>, StoreError> {
        let cannot = |e: std::io::Error| StoreError::Backend(format!("cannot start the writer's threads: {e}"));
        let (jobs, queue) = mpsc::channel(QUEUE);
        let (to_sync, committed) = std::sync::mpsc::channel();
        let syncs = Arc::new(Syncs::default());
        let writer_syncs = syncs.clone();
        let writer = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || run(WriterContext { conn, state }, queue, Syncer { committed: to_sync, syncs: writer_syncs }, after_commit))
            .map_err(cannot)?;
        let thread = writer.thread().clone();
        let wake = thread.clone();
        std::thread::Builder::new().name("sqlite-syncer".into()).spawn(move || sync(committed, durable, &syncs, &wake)).map_err(cannot)?;
        Ok(Writer { jobs, thread })
    }

    /// Runs `write` in the writer's next group; returns its result once the group is durable.
    pub async fn write<T: Send + 'static>(&self, write: impl FnOnce(&mut WriterContext<S>) -> Result<T, StoreError> + Send + 'static) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job: Job<S> = Box::new(move |context| {
            let result = match context {
                Some(context) => catch_unwind(AssertUnwindSafe(|| write(context))).unwrap_or_else(|_| Err(StoreError::Backend("a write panicked".into()))),
                None => Err(StoreError::Backend("not run: its group of writes failed".into())),
            };
            let succeeded = result.is_ok();
            let answer: Answer = Box::new(move |commit| {
                let _ = reply.send(commit.and(result));
            });
            (succeeded, answer)
        });
        self.jobs.send(job).await.map_err(|_| stopped())?;
        self.thread.unpark();
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> StoreError {
    StoreError::Backend("the store's writer has stopped".into())
}

fn not_durable() -> StoreError {
    StoreError::Backend("the store's disk failed to make a commit durable: restart the server".into())
}

/// The writer's side of the syncer.
struct Syncer {
    committed: std::sync::mpsc::Sender<Vec<Answer>>,
    syncs: Arc<Syncs>,
}

impl Syncer {
    fn busy(&self) -> bool {
        self.syncs.unsynced.load(Ordering::Acquire) > 0
    }

    /// Hands a committed group's answers over, to be given once it is durable.
    fn hand_over(&self, answers: Vec<Answer>) {
        self.syncs.unsynced.fetch_add(1, Ordering::AcqRel);
        if let Err(std::sync::mpsc::SendError(answers)) = self.committed.send(answers) {
            self.syncs.unsynced.fetch_sub(1, Ordering::AcqRel);
            for answer in answers {
                answer(Err(stopped()));
            }
        }
    }
}

fn run<S>(mut context: WriterContext<S>, mut queue: mpsc::Receiver<Job<S>>, syncer: Syncer, after_commit: impl Fn(&Connection)) {
    while let Some(first) = queue.blocking_recv() {
        let mut group = Group::begin(&context.conn, syncer.syncs.failed.load(Ordering::Acquire));
        group.run(&mut context, first);
        // The writes that come while the last group's fsync runs join this one.
        loop {
            while group.answers.len() < MAX_GROUP
                && let Ok(job) = queue.try_recv()
            {
                group.run(&mut context, job);
            }
            if group.answers.len() >= MAX_GROUP || !syncer.busy() {
                break;
            }
            // Woken by the syncer when its fsync ends, or by a caller that queued a write.
            std::thread::park();
        }
        match group.commit(&context.conn) {
            Ok(answers) => syncer.hand_over(answers),
            Err((e, answers)) => {
                tracing::error!(error = %e, writes = answers.len(), "a group of writes failed to commit");
                for answer in answers {
                    answer(Err(e.clone()));
                }
            }
        }
        after_commit(&context.conn);
    }
}

/// The syncer: an fsync for the groups committed since the last one, then their answers.
fn sync(committed: std::sync::mpsc::Receiver<Vec<Answer>>, mut durable: Durable, syncs: &Syncs, writer: &Thread) {
    while let Ok(first) = committed.recv() {
        let groups: Vec<Vec<Answer>> = std::iter::once(first).chain(committed.try_iter()).collect();
        let outcome = if syncs.failed.load(Ordering::Acquire) {
            Err(not_durable())
        } else {
            // The checkpointer holds its next flush meanwhile (`paced`): this fsync finds the disk free.
            let _committing = super::paced::Committing::begin();
            durable().map_err(|e| {
                tracing::error!(error = %e, "the WAL's fsync failed: no write is taken until the server restarts");
                syncs.failed.store(true, Ordering::Release);
                not_durable()
            })
        };
        syncs.unsynced.fetch_sub(groups.len(), Ordering::AcqRel);
        writer.unpark();
        for answer in groups.into_iter().flatten() {
            answer(outcome.clone());
        }
    }
}

/// A transaction under way: the answers of the writes it ran, and why it can no longer commit, if so.
struct Group {
    answers: Vec<Answer>,
    failure: Option<StoreError>,
}

fn backend(what: &str, e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("{what}: {e}"))
}

impl Group {
    fn begin(conn: &Connection, disk_failed: bool) -> Group {
        let failure = if disk_failed { Some(not_durable()) } else { conn.execute_batch("BEGIN IMMEDIATE").err().map(|e| backend("begin", e)) };
        Group { answers: Vec::with_capacity(MAX_GROUP), failure }
    }

    /// Runs a write in its own savepoint (or not at all if the group is lost).
    fn run<S>(&mut self, context: &mut WriterContext<S>, job: Job<S>) {
        if self.failure.is_none()
            && let Err(e) = context.conn.execute_batch("SAVEPOINT write")
        {
            self.failure = Some(backend("savepoint", e));
        }
        if self.failure.is_some() {
            self.answers.push(job(None).1);
            return;
        }
        let (succeeded, answer) = job(Some(context));
        self.answers.push(answer);
        let close = if succeeded { "RELEASE write" } else { "ROLLBACK TO write; RELEASE write" };
        if let Err(e) = context.conn.execute_batch(close) {
            self.failure = Some(backend("savepoint", e));
        }
    }

    /// Commits the group (not yet durable: see the syncer), or rolls it back if it failed.
    fn commit(self, conn: &Connection) -> Result<Vec<Answer>, (StoreError, Vec<Answer>)> {
        let result = match self.failure {
            Some(e) => Err(e),
            None => conn.execute_batch("COMMIT").map_err(|e| backend("commit", e)),
        };
        if result.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        match result {
            Ok(()) => Ok(self.answers),
            Err(e) => Err((e, self.answers)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A writer on a fresh database whose fsyncs wait for the test's go-ahead, one at a time, and count.
    struct Gated {
        writer: Arc<Writer<()>>,
        go: std::sync::mpsc::SyncSender<std::io::Result<()>>,
        fsyncs: Arc<AtomicUsize>,
        _dir: tempfile::TempDir,
    }

    fn gated() -> Gated {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("w.sqlite3")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t (n INTEGER NOT NULL)").unwrap();
        let (go, gate) = std::sync::mpsc::sync_channel(0);
        let gate = Mutex::new(gate);
        let fsyncs = Arc::new(AtomicUsize::new(0));
        let counted = fsyncs.clone();
        let durable: Durable = Box::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            gate.lock().unwrap().recv().unwrap()
        });
        let writer = Arc::new(Writer::start(conn, (), durable, |_| {}).unwrap());
        Gated { writer, go, fsyncs, _dir: dir }
    }

    fn insert(writer: &Arc<Writer<()>>, n: i64) -> tokio::task::JoinHandle<Result<(), StoreError>> {
        let writer = writer.clone();
        tokio::spawn(async move {
            writer
                .write(move |c| {
                    c.conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
                    Ok(())
                })
                .await
        })
    }

    async fn until(what: impl Fn() -> bool) {
        for _ in 0..500 {
            if what() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("not reached in 5 s");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_is_answered_only_once_its_fsync_has_ended() {
        let g = gated();
        let write = insert(&g.writer, 1);
        until(|| g.fsyncs.load(Ordering::SeqCst) == 1).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!write.is_finished(), "answered before its fsync ended");
        g.go.send(Ok(())).unwrap();
        write.await.unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writes_that_come_during_an_fsync_commit_together_after_it() {
        let g = gated();
        let first = insert(&g.writer, 0);
        until(|| g.fsyncs.load(Ordering::SeqCst) == 1).await;
        let during: Vec<_> = (1..=40).map(|n| insert(&g.writer, n)).collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(g.fsyncs.load(Ordering::SeqCst), 1, "no second fsync may start while the first runs");
        g.go.send(Ok(())).unwrap();
        first.await.unwrap().unwrap();
        // The forty, run while the first fsync ran, are one group: one more fsync for all of them.
        until(|| g.fsyncs.load(Ordering::SeqCst) == 2).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(during.iter().all(|w| !w.is_finished()));
        g.go.send(Ok(())).unwrap();
        for write in during {
            write.await.unwrap().unwrap();
        }
        assert_eq!(g.fsyncs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_failed_fsync_its_writes_and_every_later_one_fail() {
        let g = gated();
        let lost = insert(&g.writer, 1);
        until(|| g.fsyncs.load(Ordering::SeqCst) == 1).await;
        g.go.send(Err(std::io::Error::other("the disk is gone"))).unwrap();
        assert!(matches!(lost.await.unwrap(), Err(StoreError::Backend(e)) if e.contains("durable")));
        let refused = insert(&g.writer, 2).await.unwrap();
        assert!(matches!(refused, Err(StoreError::Backend(e)) if e.contains("durable")));
        assert_eq!(g.fsyncs.load(Ordering::SeqCst), 1, "no fsync after a failed one");
    }
}
