//! Admission: a job waits until its whole reservation fits, first come first served per budget.
//!
//! Each budget has a FIFO queue of waiting jobs. Only the head of a queue asks the
//! [`BudgetStore`]; a smaller job behind a large one waits its turn, so large reservations are not
//! starved. A job with several requirements takes its budgets in name order (the same order for
//! every job, so two jobs can never wait on each other).
//!
//! The granted [`Permit`] is an owned value that travels with the work: dropping it — because the
//! job finished, failed, panicked or was cancelled — gives the concurrency back and wakes the next
//! waiter. Settling it first reconciles the token reservation with what was really used.
//!
//! Guarantees: a budget's limits are never exceeded by reservations made through it; waiters on
//! one budget are granted in arrival order. Not guaranteed: fairness across budgets, or across
//! processes sharing a store (each process is FIFO on its own).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use super::budget::{BudgetStore, Lease, Reservation};
use crate::job::{Ask, Requirement};
use crate::{Error, Result};

#[derive(Default)]
struct Queue {
    waiters: Mutex<VecDeque<(u64, Arc<Notify>)>>,
    next: std::sync::atomic::AtomicU64,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, Arc<Notify>)>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake_head(&self) {
        if let Some((_, n)) = self.lock().front() {
            n.notify_one();
        }
    }
}

/// Removes a waiter from its queue when it stops waiting (granted, refused or cancelled).
struct Ticket<'a> {
    queue: &'a Queue,
    id: u64,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut q = self.queue.lock();
        if let Some(pos) = q.iter().position(|(id, _)| *id == self.id) {
            q.remove(pos);
        }
        if let Some((_, n)) = q.front() {
            n.notify_one();
        }
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
    /// Admission over a budget store.
    pub fn new(store: Arc<dyn BudgetStore>) -> Self {
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

    /// Wake the head waiter of a budget (after a release, a settlement or a limits change).
    pub fn wake(&self, budget: &str) {
        let q = self
            .inner
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(budget)
            .cloned();
        if let Some(q) = q {
            q.wake_head();
        }
    }

    /// Wait until every requirement is admitted and return the permit.
    pub async fn acquire(&self, requirements: Vec<Requirement>) -> Result<Permit> {
        if requirements.is_empty() {
            return Ok(Permit {
                admission: None,
                requirements,
                leases: Vec::new(),
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
        let notify = Arc::new(Notify::new());
        let id = queue
            .next
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        queue.lock().push_back((id, notify.clone()));
        let _ticket = Ticket { queue: &queue, id };
        loop {
            let is_head = queue.lock().front().is_some_and(|(h, _)| *h == id);
            if !is_head {
                notify.notified().await;
                continue;
            }
            let reservation = match self.inner.store.try_reserve_local(ask) {
                Some(r) => r,
                None => self.inner.store.try_reserve(ask).await?,
            };
            match reservation {
                Reservation::Granted(lease) => return Ok(lease),
                Reservation::Never(reason) => return Err(unadmittable(ask, reason)),
                Reservation::Wait(None) => notify.notified().await,
                Reservation::Wait(Some(d)) => {
                    tokio::select! {
                        () = notify.notified() => {}
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
pub struct Permit {
    admission: Option<Admission>,
    requirements: Vec<Requirement>,
    leases: Vec<(usize, Lease)>,
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
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The leases held, one per requirement.
    pub fn leases(&self) -> impl Iterator<Item = &Lease> {
        self.leases.iter().map(|(_, l)| l)
    }

    /// Reconcile the seat's reservation with the tokens it really used, then release.
    pub(crate) fn settle(self, seat_used: Option<u64>) {
        if let (Some(adm), Some(used)) = (&self.admission, seat_used) {
            for (idx, lease) in &self.leases {
                if matches!(self.requirements.get(*idx), Some(Requirement::Seat(_))) {
                    adm.inner.store.settle(lease, used);
                }
            }
        }
        drop(self);
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
