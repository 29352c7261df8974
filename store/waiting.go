package store

import "time"

// Paged reads of the waiting queue, for pages that show one part of a long line (the UI's pools
// page, issue 21): a page of one pool's line in admission order with each entry's place in the
// whole line, counts per pool, and the part of the queue an admission walk must see to say why
// the entries of a page wait (§4.5). Their order is the walk's (pools.Compare): force starts by
// queue ID, then waiting entries that keep claims (sensors between pokes), then priority
// (higher first), fresh entries before a backfill's, due time, queue ID.

// WaitingQuery selects a page of the entries waiting for one pool.
type WaitingQuery struct {
	Pool string
	// DAG keeps the entries whose DAG id contains it (case-insensitive); "" keeps all.
	DAG           string
	Offset, Limit int
}

// WaitingPage is a page of a pool's line: Entries with, at the same index, Positions (1-based
// places in the pool's whole line, whatever the filter), and Total, the entries the filter keeps.
type WaitingPage struct {
	Entries   []Entry
	Positions []int
	Total     int
}

// WaitingCount is what waits for one pool: entries and the slots they ask of it.
type WaitingCount struct{ Entries, Slots int }

// WalkBound says which waiting entries WaitingThrough returns: every entry walked at or before
// Through (by the walk's order) and, wherever it is in line, every force start, every entry that
// keeps claims and every entry queued before Starved[pool] that needs that pool (an entry a
// backfill pool may promote, §4.4). Through 0 selects no entry by place.
type WalkBound struct {
	Through int64
	Starved map[string]time.Time
}
