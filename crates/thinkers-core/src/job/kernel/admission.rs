//! Admission: a job waits until its whole reservation fits, first come first served per budget.
//!
//! Each budget has a FIFO queue of waiting jobs. Only the head of a queue is ever admitted; a
//! smaller job behind a large one waits its turn, so large reservations are not starved. When
//! capacity comes back (a permit is released), the releasing side reserves for the head itself
//! and hands it the lease, then tries the next head, and stops at the first that does not fit:
//! the only job woken is one that was admitted, never one that would look, find no room and
//! sleep again. A head whose wait only time can end (a bucket refilling, a pause) arms its own timer
//! and asks again when it fires. A job with several requirements takes its budgets in name order
//! (the same order for every job, so two jobs can never wait on each other).
//!
//! The granted [`Permit`] is an owned value that travels with the work: dropping it — because the
//! job finished, failed, panicked or was cancelled — gives the concurrency back and wakes the next
//! waiter. Settling it first reconciles the token reservation with what was really used.
//!
//! Guarantees: a budget's limits are never exceeded by reservations made through it; waiters on
//! one budget are granted in arrival order. Not guaranteed: fairness across budgets, or across
//! processes sharing a store (each process is FIFO on its own).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use super::budget::{BudgetStore, Lease, Reservation};
use crate::job::{Ask, Requirement, SeatUse};
use crate::{Error, Result};

/// A job waiting in a budget's queue.
struct Waiter {
    id: u64,
    /// What it waits for (the queue reserves it on the waiter's behalf when capacity returns).
    ask: Ask,
    slot: Arc<Slot>,
    /// The waiter is asking a store outside the process itself; nothing is reserved for it
    /// meanwhile.
    asking: bool,
}

/// Where a waiter is woken, and where a lease reserved for it waits until it runs.
#[derive(Default)]
struct Slot {
    notify: Notify,
    lease: Mutex<Option<Lease>>,
}

impl Slot {
    fn take(&self) -> Option<Lease> {
        self.lease
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn hand(&self, lease: Lease) {
        *self.lease.lock().unwrap_or_else(PoisonError::into_inner) = Some(lease);
        self.notify.notify_one();
    }
}

#[derive(Default)]
struct Queue {
    waiters: Mutex<VecDeque<Waiter>>,
    next: std::sync::atomic::AtomicU64,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Waiter>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serve the queue from its head once capacity may have come back (a release, a waiter
    /// leaving, a limits change): while the head's ask fits, reserve it for the head, hand the
    /// lease over and wake it. A head that does not fit is not woken when only a release can
    /// make room (the next release serves it); it is woken when time will (to arm its timer),
    /// when it can never fit (to fail), and when the store decides outside the process (to ask
    /// it itself). So with an in-memory store a release wakes the job it admits and no other.
    fn serve(&self, store: &dyn BudgetStore) {
        let mut q = self.lock();
        while let Some(head) = q.front() {
            if head.asking {
                // It hears of this once its own ask comes back, and asks again if it must wait.
                head.slot.notify.notify_one();
                return;
            }
            match store.try_reserve_local(&head.ask) {
                Some(Reservation::Granted(lease)) => {
                    if let Some(served) = q.pop_front() {
                        served.slot.hand(lease);
                    }
                }
                Some(Reservation::Wait(None)) => return,
                Some(Reservation::Wait(Some(_)) | Reservation::Never(_)) | None => {
                    head.slot.notify.notify_one();
                    return;
                }
            }
        }
    }
}

/// Takes a waiter out of its queue when it stops waiting without a lease (refused or
/// cancelled): a lease handed to it meanwhile goes back unused, and the queue is served again,
/// as the waiter may have held up the ones behind it.
struct Ticket<'a> {
    queue: &'a Queue,
    store: &'a dyn BudgetStore,
    id: u64,
    slot: &'a Slot,
    served: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if self.served {
            return;
        }
        {
            let mut q = self.queue.lock();
            if let Some(pos) = q.iter().position(|w| w.id == self.id) {
                q.remove(pos);
            }
        }
        if let Some(lease) = self.slot.take() {
            // Reserved for this waiter, never used: nothing was sent.
            self.store.settle(&lease, SeatUse::NONE);
            self.store.release(&lease);
        }
        self.queue.serve(self.store);
    }
}

pub(crate) struct AdmissionInner {
    store: Arc<dyn BudgetStore>,
    queues: Mutex<foldhash::HashMap<String, Arc<Queue>>>,
}

/// The admission gate of a dispatcher.
#[derive(Clone)]
pub struct Admission {
    inner: Arc<AdmissionInner>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission").finish_non_exhaustive()
    }
}

impl Admission {
    /// Admission over a budget store (the dispatcher's builder makes the one a dispatcher uses).
    pub(crate) fn new(store: Arc<dyn BudgetStore>) -> Self {
        Self {
            inner: Arc::new(AdmissionInner {
                store,
                queues: Mutex::new(foldhash::HashMap::default()),
            }),
        }
    }

    /// The budget store.
    pub fn store(&self) -> &Arc<dyn BudgetStore> {
        &self.inner.store
    }

    fn queue(&self, budget: &str) -> Arc<Queue> {
        let mut g = self
            .inner
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(q) = g.get(budget) {
            return q.clone();
        }
        let q = Arc::new(Queue::default());
        g.insert(budget.to_owned(), q.clone());
        q
    }

    /// Serve a budget's waiters after capacity may have come back (a release, a settlement or a
    /// limits change): each head that now fits is admitted and woken (see `Queue::serve`).
    pub(crate) fn wake(&self, budget: &str) {
        let q = self
            .inner
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(budget)
            .cloned();
        if let Some(q) = q {
            q.serve(self.inner.store.as_ref());
        }
    }

    /// Wait until every requirement is admitted and return the permit.
    ///
    /// Crate-private: the dispatcher's attempt loop is the only caller, so a permit exists only
    /// for an attempt of a submitted job, and it reaches the job inside the attempt's
    /// [`crate::job::Resources`].
    pub(crate) async fn acquire(&self, requirements: Vec<Requirement>) -> Result<Permit> {
        if requirements.is_empty() {
            return Ok(Permit {
                admission: None,
                requirements,
                leases: Vec::new(),
                seat_settled: AtomicBool::new(false),
            });
        }
        let ask = |r: &Requirement| {
            if let Requirement::Resource {
                budget,
                default_limits: Some(l),
            } = r
                && self.inner.store.limits(budget).is_none()
            {
                self.inner.store.configure(budget, *l);
            }
            r.ask()
        };
        let mut leases = Vec::with_capacity(requirements.len());
        if let [only] = &requirements[..] {
            // The common case (one model seat): nothing to order.
            leases.push((0, self.acquire_one(&ask(only)).await?));
            return Ok(Permit {
                admission: Some(self.clone()),
                requirements,
                leases,
                seat_settled: AtomicBool::new(false),
            });
        }
        let mut order: Vec<(Ask, usize)> = requirements
            .iter()
            .enumerate()
            .map(|(i, r)| (ask(r), i))
            .collect();
        order.sort_by(|a, b| a.0.budget.cmp(&b.0.budget));
        // Leases taken so far are released if a later one fails (the permit drops).
        let mut permit = Permit {
            admission: Some(self.clone()),
            requirements,
            leases,
            seat_settled: AtomicBool::new(false),
        };
        for (ask, idx) in order {
            let lease = self.acquire_one(&ask).await?;
            permit.leases.push((idx, lease));
        }
        Ok(permit)
    }

    async fn acquire_one(&self, ask: &Ask) -> Result<Lease> {
        let queue = self.queue(&ask.budget);
        // Nobody waits and the store decides in memory: one try, without joining the queue. The
        // queue's lock is held through the try, so no waiter arrives in between and is passed.
        {
            let waiters = queue.lock();
            if waiters.is_empty() {
                match self.inner.store.try_reserve_local(ask) {
                    Some(Reservation::Granted(lease)) => return Ok(lease),
                    Some(Reservation::Never(reason)) => return Err(unadmittable(ask, reason)),
                    Some(Reservation::Wait(_)) | None => {}
                }
            }
        }
        let store = self.inner.store.as_ref();
        let slot = Arc::new(Slot::default());
        let id = queue
            .next
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        queue.lock().push_back(Waiter {
            id,
            ask: ask.clone(),
            slot: Arc::clone(&slot),
            asking: false,
        });
        let mut ticket = Ticket {
            queue: &queue,
            store,
            id,
            slot: &slot,
            served: false,
        };
        loop {
            // Served by a job that gave capacity back: the lease is already ours.
            if let Some(lease) = slot.take() {
                ticket.served = true;
                return Ok(lease);
            }
            // At the head, ask for ourselves (after a timer, or where the queue cannot).
            let local = {
                let mut q = queue.lock();
                match q.front_mut() {
                    Some(head) if head.id == id => {
                        let r = store.try_reserve_local(ask);
                        match &r {
                            Some(Reservation::Granted(_)) => {
                                q.pop_front();
                            }
                            None => head.asking = true,
                            Some(_) => {}
                        }
                        Some(r)
                    }
                    _ => None,
                }
            };
            let reservation = match local {
                // Not the head, or served since the check above (the lease waits in the slot).
                None => {
                    slot.notify.notified().await;
                    continue;
                }
                Some(Some(r)) => r,
                Some(None) => {
                    let r = store.try_reserve(ask).await;
                    let mut q = queue.lock();
                    if let Ok(Reservation::Granted(_)) = &r {
                        q.retain(|w| w.id != id);
                    } else if let Some(me) = q.iter_mut().find(|w| w.id == id) {
                        me.asking = false;
                    }
                    r?
                }
            };
            match reservation {
                Reservation::Granted(lease) => {
                    ticket.served = true;
                    // Room may be left for the next in line.
                    queue.serve(store);
                    return Ok(lease);
                }
                Reservation::Never(reason) => return Err(unadmittable(ask, reason)),
                Reservation::Wait(None) => slot.notify.notified().await,
                Reservation::Wait(Some(d)) => {
                    tokio::select! {
                        () = slot.notify.notified() => {}
                        () = tokio::time::sleep(d) => {}
                    }
                }
            }
        }
    }
}

/// The refusal of an ask its budget can never admit.
fn unadmittable(ask: &Ask, reason: String) -> Error {
    Error::Unadmittable {
        budget: ask.budget.to_string(),
        reason,
    }
}

/// An admitted reservation. Owned by the attempt; dropping it releases everything it holds.
///
/// It has no public constructor: only admission mints one, for the dispatcher's attempt loop.
pub struct Permit {
    admission: Option<Admission>,
    requirements: Vec<Requirement>,
    leases: Vec<(usize, Lease)>,
    /// Whether the seat's reservation was reconciled already ([`Permit::settle_seat`]).
    seat_settled: AtomicBool,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("requirements", &self.requirements)
            .field("leases", &self.leases)
            .finish_non_exhaustive()
    }
}

impl Permit {
    /// What was admitted.
    pub(crate) fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Reconcile the seat's reservation with the tokens it really used, then release.
    pub(crate) fn settle(self, seat_used: Option<SeatUse>) {
        if let Some(used) = seat_used {
            self.settle_seat(used);
        }
        drop(self);
    }

    /// Reconcile the seat leases with `used`, once: a later call does nothing. Waiters on their
    /// budgets look again at once (the call gave back what it did not use).
    pub(crate) fn settle_seat(&self, used: SeatUse) {
        if self.seat_settled.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(adm) = &self.admission else {
            return;
        };
        for (idx, lease) in &self.leases {
            if matches!(self.requirements.get(*idx), Some(Requirement::Seat(_))) {
                adm.inner.store.settle(lease, used);
                adm.wake(&lease.budget);
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(adm) = &self.admission {
            for (_, lease) in &self.leases {
                adm.inner.store.release(lease);
                adm.wake(&lease.budget);
            }
        }
    }
}

#[cfg(test)]
mod tests;
