// Package pools decides admission: which waiting queue entries get their pool slots now, all
// or nothing, and why the others wait (§4).
//
// It holds pool configuration (Spec, Resolve), the enqueue-time checks (CheckEnqueue), the
// admission order (Compare) and the pass itself, twice:
//   - Admit, the full walk: a pure function of a Snapshot and the time, linear in the queue.
//     It is the reference, and the source of wait reasons, computed when someone reads them
//     (Decision.Reason, §4.5);
//   - Queue, the same decisions made incrementally: the scheduler loop keeps one between
//     passes, tells it what changed, and each Pass costs what changed and what it admits,
//     not the number of waiting entries. A property test checks it against Admit pass after
//     pass.
//
// The caller applies a Decision in one transaction. Nothing here does I/O.
//
// Vocabulary: named pools are configured (poolflow.yaml or the store) and are strict or
// backfill; implicit pools (_global, _dag/…, _task/…) are the limits of §4.2 and always
// backfill without starvation promotion. An entry's Needs list every pool it needs, named and
// implicit; admission debits all of them at once.
//
// Choices where the spec is silent:
//   - starvation counts from Entry.Queued (when the entry joined or rejoined the queue); a
//     zero Queued counts from Due, so callers that do not track it keep the old behaviour;
//   - an entry whose NotBefore is after now (a reschedule sensor between pokes) is invisible:
//     not walked, expired or explained, though its kept claims still hold their room;
//   - starvation promotion keeps room instead of reordering the walk (see Admit), so strict
//     pools keep their order and a starved entry needing a strict pool does not jump its queue;
//   - pools whose starvation_after is 0 never promote, not even for a strict pool's head;
//   - an entry behind, in a strict pool, an entry that cannot be admitted for a reason of its
//     own (paused, forbid, node_unavailable) is not promoted either, nor starved as another
//     strict pool's head: the turn-3 rule of §4.4 speaks of the blocked entry itself, but
//     the one behind it cannot be admitted before it, and keeping room for it froze backfill
//     pools just the same;
//   - a 0-slot pool is allowed and admits nothing: any need of it is over_capacity;
//   - entries with unknown pools or needs above capacity neither block nor keep room: the
//     caller rejects them;
//   - not_mine entries get no Reason (their own daemon gives one), and expired entries are
//     reported whatever their Block, since a passed deadline is a fact either daemon may apply.
package pools
