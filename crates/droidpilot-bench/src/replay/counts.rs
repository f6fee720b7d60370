//! The counts that say whether a replay can be trusted, beyond "did it complete": the
//! effects a run had on the phone's data compared with the clean run's (an alarm deleted
//! twice is a repeated action), read from the sim's state, so no drift can hide them.
//!
//! An effect is an item of the phone's data that a run added or removed: a contact,
//! alarm or note (by id), an outgoing message (per conversation), an order, a unit in the
//! shop's cart. A run's effects are counted from the state it started in to the state it
//! ended in; what it did beyond the clean run's effects (one more alarm removed, one more
//! message sent) is repeated. Edits in place (a renamed contact) and switches are not
//! counted here: applying one twice leaves a state the task's checker refuses.

use std::collections::{BTreeMap, BTreeSet};

use crate::device::sim::PhoneState;

/// Per kind of item: how many a run added and how many it removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects(BTreeMap<&'static str, (u32, u32)>);

impl Effects {
    /// What changed from `before` to `after`.
    pub fn between(before: &PhoneState, after: &PhoneState) -> Effects {
        let mut e = Effects::default();
        e.ids(
            "contact",
            ids(&before.contacts, |c| c.id),
            ids(&after.contacts, |c| c.id),
        );
        e.ids(
            "alarm",
            ids(&before.alarms, |a| a.id),
            ids(&after.alarms, |a| a.id),
        );
        e.ids(
            "note",
            ids(&before.notes, |n| n.id),
            ids(&after.notes, |n| n.id),
        );
        e.ids(
            "order",
            ids(&before.shop.orders, |o| o.id),
            ids(&after.shop.orders, |o| o.id),
        );
        e.counts("message", sent(before), sent(after));
        e.counts("cart unit", cart(before), carted(before, after));
        e
    }

    fn ids(&mut self, kind: &'static str, before: BTreeSet<u64>, after: BTreeSet<u64>) {
        let added = after.difference(&before).count() as u32;
        let removed = before.difference(&after).count() as u32;
        self.0.insert(kind, (added, removed));
    }

    fn counts(
        &mut self,
        kind: &'static str,
        before: BTreeMap<String, u32>,
        after: BTreeMap<String, u32>,
    ) {
        let (mut added, mut removed) = (0, 0);
        let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        for k in keys {
            let (b, a) = (
                before.get(k).copied().unwrap_or(0),
                after.get(k).copied().unwrap_or(0),
            );
            added += a.saturating_sub(b);
            removed += b.saturating_sub(a);
        }
        self.0.insert(kind, (added, removed));
    }

    /// Effects this run had beyond `clean`'s, kind by kind: the actions applied again.
    pub fn beyond(&self, clean: &Effects) -> u32 {
        self.0
            .iter()
            .map(|(kind, (added, removed))| {
                let (ca, cr) = clean.0.get(kind).copied().unwrap_or((0, 0));
                added.saturating_sub(ca) + removed.saturating_sub(cr)
            })
            .sum()
    }
}

fn ids<T>(items: &[T], id: fn(&T) -> u64) -> BTreeSet<u64> {
    items.iter().map(id).collect()
}

/// Outgoing messages per conversation.
fn sent(st: &PhoneState) -> BTreeMap<String, u32> {
    st.threads
        .iter()
        .map(|t| {
            let n = t.messages.iter().filter(|m| m.outgoing).count() as u32;
            (t.contact.clone(), n)
        })
        .collect()
}

/// Units in the cart per product.
fn cart(st: &PhoneState) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for (product, qty) in &st.shop.cart {
        *out.entry(product.to_string()).or_insert(0) += qty;
    }
    out
}

/// Units put in the cart per product by the end of a run: those still there and those
/// that left it in an order the run placed. A checkout empties the cart, so the cart
/// alone would count a run that stopped before paying (one unit left) as one unit beyond
/// a clean run that paid (none left), though nothing was added twice.
fn carted(before: &PhoneState, after: &PhoneState) -> BTreeMap<String, u32> {
    let old = ids(&before.shop.orders, |o| o.id);
    let mut out = cart(after);
    let placed = after.shop.orders.iter().filter(|o| !old.contains(&o.id));
    for (product, qty) in placed.flat_map(|o| &o.items) {
        *out.entry(product.to_string()).or_insert(0) += qty;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_alarm_deleted_is_one_repeated_action_and_a_missing_delete_is_none() {
        let before = PhoneState::default();
        let mut clean = before.clone();
        clean.alarms.remove(0);
        let mut twice = clean.clone();
        twice.alarms.remove(0);
        let clean_fx = Effects::between(&before, &clean);
        assert_eq!(Effects::between(&before, &twice).beyond(&clean_fx), 1);
        assert_eq!(Effects::between(&before, &clean).beyond(&clean_fx), 0);
        // A run that stopped before deleting anything did less, not more.
        assert_eq!(Effects::between(&before, &before).beyond(&clean_fx), 0);
    }

    /// A clean run put a unit in the cart and paid for it; a run that stopped before
    /// paying left the unit in the cart: nothing was added twice. A unit added twice is.
    #[test]
    fn a_unit_left_in_the_cart_is_no_repeat_and_a_unit_added_twice_is() {
        let before = PhoneState::default();
        let mut clean = before.clone();
        clean.shop.orders.push(crate::device::sim::state::Order {
            id: 999,
            items: vec![(3, 1)],
            total_cents: 1999,
        });
        let clean_fx = Effects::between(&before, &clean);
        let mut stopped = before.clone();
        stopped.shop.cart.push((3, 1));
        assert_eq!(Effects::between(&before, &stopped).beyond(&clean_fx), 0);
        let mut twice = stopped.clone();
        twice.shop.cart[0].1 = 2;
        assert_eq!(Effects::between(&before, &twice).beyond(&clean_fx), 1);
    }

    #[test]
    fn a_message_sent_twice_and_an_extra_order_with_its_unit_count_once_each() {
        let before = PhoneState::default();
        let mut clean = before.clone();
        let msg = crate::device::sim::state::Message {
            outgoing: true,
            text: "late".into(),
        };
        clean.threads[0].messages.push(msg.clone());
        let mut run = clean.clone();
        run.threads[0].messages.push(msg);
        run.shop.orders.push(crate::device::sim::state::Order {
            id: 999,
            items: vec![(1, 1)],
            total_cents: 100,
        });
        let clean_fx = Effects::between(&before, &clean);
        // The message, the order, and the unit the order took from the cart.
        assert_eq!(Effects::between(&before, &run).beyond(&clean_fx), 3);
    }
}
