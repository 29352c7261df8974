// Package notify tells people what happened (§13): the event a handler sends, the notifiers
// that send it (webhook, slack, email, command) and the Sender, the background component of a
// serve daemon that delivers the store's outbox.
//
// # How an event travels
//
// The scheduler's pass that changes a state (a try failed, a run ended, an entry waited too
// long, a deadline passed) writes one outbox row per notifier of the handler, in the same
// transaction as the change (executor/decide's Notify op): a change that did not commit told
// nobody, and one that did cannot be lost. Each serve daemon runs a Sender off its loop: it
// claims due rows under a lease (store.Tx.ClaimNotifications, under the writers' lock, so two
// daemons never claim one row for the same try), sends each with a bounded time, and settles
// it: delivered, failed for good after max_tries, or pending again after a back-off that
// doubles up to max_retry_delay. A daemon killed while sending leaves its lease to lapse, and
// another daemon takes the row over; the receiver may then see the event twice, with the same
// Idempotency-Key. A slow or failing receiver never delays a pass: sending holds no lock and
// runs on its own goroutines, at most notifications.concurrency at once.
//
// # The webhook's body
//
// A webhook POSTs Event as JSON (Content-Type application/json) with the headers
// Idempotency-Key (the same for every try of one event to one notifier) and, when the notifier
// has a secret, X-Poolflow-Signature: sha256=<hex HMAC-SHA256 of the body with the secret>.
// Any 2xx answer is a delivery; anything else, a timeout or a closed connection is a failed
// try. At most 10 MB of an answer is read (the rest is cut), and only its first 200 bytes are
// kept in last_error.
package notify
