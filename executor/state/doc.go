// Package state is the scheduler's memory: the open runs a daemon holds with their task
// instances, their queue entries, other owners' waiting entries and open runs, the pools and
// DAG flags as last read, the claims read in this pass, and the admission queue (pools.Queue)
// kept between passes.
//
// It owns every invalidation: a change to a task instance is Touch'ed (it is then written
// once, at the end of the pass, and its run's frontier, timers and open count follow it), a
// change to an entry's admission view marks it for the queue (QueueDirty, DropEntry, AddEntry),
// and the queue is brought in step with memory and with the pass's claims by SyncQueue. The
// decision (package decide) changes memory only through these, so nothing it forgets can leave
// the queue or the store behind.
//
// It does no I/O: Load and Refresh build memory from rows the daemon read, and nothing here
// reads a clock (times come in as arguments).
package state
