package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestEntryStateMachine: an entry moves only along the state machine; a late or repeated call
// (a requeue after the end, a second release) is ErrEntryState and changes nothing.
func TestEntryStateMachine(t *testing.T) {
	t.Parallel()
	st, _ := openTemp(t)
	e := seed(t, st)
	now := time.Now()
	tx := func(fn func(tx *Tx) error) error { return st.WithTx(context.Background(), fn) }
	if err := tx(func(tx *Tx) error { return tx.Admit(e, "d1", 1, now, now.Add(time.Minute)) }); err != nil {
		t.Fatal(err)
	}
	if err := tx(func(tx *Tx) error { return tx.Admit(e, "d1", 1, now, now.Add(time.Minute)) }); !errors.Is(err, ErrEntryState) {
		t.Fatalf("second admission: %v, want ErrEntryState", err)
	}
	if err := tx(func(tx *Tx) error {
		held, err := tx.ReleaseHeld(e.ID, "d1", 1, now)
		if !held {
			t.Error("the holder's release was refused")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(tx *Tx) error{
		"requeue":  func(tx *Tx) error { return tx.RequeueEntry(e.ID) },
		"retire":   func(tx *Tx) error { return tx.EndEntry(e.ID, EntryRetired, "retired", "late", now) },
		"admit":    func(tx *Tx) error { return tx.Admit(e, "d1", 1, now, now.Add(time.Minute)) },
		"poke":     func(tx *Tx) error { return tx.Reschedule(e.ID, nil, now) },
		"cancel":   func(tx *Tx) error { return tx.EndEntry(e.ID, EntryCancelled, "cancelled", "late", now) },
		"waiting?": func(tx *Tx) error { return tx.moveEntry(e.ID, EntryWaiting, "") },
	} {
		if err := tx(fn); !errors.Is(err, ErrEntryState) {
			t.Errorf("%s of a done entry: %v, want ErrEntryState", name, err)
		}
	}
	got, err := st.EntryByID(context.Background(), e.ID)
	if err != nil || got.State != string(EntryDone) {
		t.Fatalf("entry after refused moves: %+v %v", got, err)
	}
	if claims, _ := st.ListClaims(context.Background()); len(claims) != 0 {
		t.Fatalf("a refused move left claims: %+v", claims)
	}
}

// TestCanMove lists the allowed moves: nothing leaves a terminal state.
func TestCanMove(t *testing.T) {
	t.Parallel()
	all := []EntryState{EntryWaiting, EntryAdmitted, EntryDone, EntryExpired, EntryCancelled, EntryRejected, EntryRetired}
	allowed := map[[2]EntryState]bool{
		{EntryWaiting, EntryAdmitted}: true, {EntryAdmitted, EntryWaiting}: true, {EntryAdmitted, EntryDone}: true,
		{EntryWaiting, EntryDone}: true, {EntryWaiting, EntryExpired}: true, {EntryWaiting, EntryCancelled}: true,
		{EntryWaiting, EntryRejected}: true, {EntryWaiting, EntryRetired}: true,
	}
	for _, from := range all {
		for _, to := range all {
			if got := CanMove(from, to); got != allowed[[2]EntryState{from, to}] {
				t.Errorf("CanMove(%s, %s) = %v", from, to, got)
			}
			if from.Terminal() && CanMove(from, to) {
				t.Errorf("%s is terminal but may become %s", from, to)
			}
		}
	}
}

// TestOwnerRows: each start takes the next epoch and clears the handled mark; a heartbeat
// reports a takeover (handled epoch) or a newer owner of the id and renews nothing then.
func TestOwnerRows(t *testing.T) {
	t.Parallel()
	st, _ := openTemp(t)
	now := time.Unix(1_700_000_000, 0).UTC()
	var epochs []int64
	for i := 0; i < 2; i++ {
		o := Owner{ID: "d1", Kind: OwnerDaemon, Host: "h", PID: 42, StartedAt: now, Heartbeat: now, LeaseUntil: now.Add(time.Minute)}
		if err := st.WithTx(context.Background(), func(tx *Tx) error {
			if err := tx.PutOwner(&o); err != nil {
				return err
			}
			return tx.MarkOwnerHandled("d1", o.Epoch)
		}); err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, o.Epoch)
	}
	if epochs[0] != 1 || epochs[1] != 2 {
		t.Fatalf("epochs %v, want 1, 2", epochs)
	}
	later := now.Add(time.Hour)
	err := st.WithTx(context.Background(), func(tx *Tx) error {
		row, err := tx.Heartbeat("d1", 2, later, later.Add(time.Minute))
		if row.HandledEpoch != 2 {
			t.Errorf("heartbeat after a takeover: handled %d, want 2", row.HandledEpoch)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.GetOwner(context.Background(), "d1")
	if err != nil || !o.Heartbeat.Equal(now) {
		t.Fatalf("a handled owner's heartbeat renewed its lease: %+v %v", o, err)
	}
	if err := st.WithTx(context.Background(), func(tx *Tx) error { return tx.ReleaseOwner("d1", 2, later) }); err != nil {
		t.Fatal(err)
	}
	if o, _ := st.GetOwner(context.Background(), "d1"); !o.LeaseUntil.Equal(later) {
		t.Fatalf("released lease until %v, want %v", o.LeaseUntil, later)
	}
}
