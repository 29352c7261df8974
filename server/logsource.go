package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// An attempt's log is written in the state folder of the daemon that runs it, on its host
// (§3.4), and stays there: any daemon reads it through that daemon's API (docs/design.md,
// "Logs from any host", says why the logs are not shipped into the store).

// attemptRef names one attempt of a task instance as the store has it.
type attemptRef struct {
	run     store.Run
	taskID  string
	state   vocab.TaskState // the task instance's state
	current int             // its latest try
	entry   *store.Entry    // its newest queue entry, nil when none
	try     int
}

func (a attemptRef) String() string {
	return fmt.Sprintf("try %d of task %s (run %s of DAG %s)", a.try, a.taskID, a.run.RunID, a.run.DAGID)
}

// logHome is where an attempt's log is read: a file of this daemon's state folder, or the API of
// the live daemon that holds it.
type logHome struct {
	path   string       // the local file; "" when remote is set
	remote *store.Owner // the daemon to ask
	holder string       // the daemon that ran (or runs) the attempt; "" unknown
}

// logHolder says which daemon ran the attempt, whose state folder holds its log: the attempt's
// row once it ended, the daemon holding its claims while it runs, the run's owner for a
// reschedule sensor between pokes (sensors run on their owner, §9). "" when no daemon ran it
// (it waits, or it expired, was cancelled or rejected) or the store does not say.
func (s *Server) logHolder(ctx context.Context, a attemptRef) (string, error) {
	ended, err := s.cfg.Store.ListAttempts(ctx, a.run.PK, a.taskID)
	if err != nil {
		return "", err
	}
	for _, at := range ended {
		if at.TryNumber == a.try {
			return at.Daemon, nil
		}
	}
	if a.entry == nil || a.entry.TryNumber != a.try || a.try != a.current {
		return "", nil
	}
	if a.entry.State == vocab.EntryAdmitted {
		claims, err := s.cfg.Store.ListClaims(ctx)
		if err != nil {
			return "", err
		}
		for _, c := range claims {
			if c.Entry == a.entry.ID {
				return c.Daemon, nil
			}
		}
	}
	if a.state == vocab.TaskUpForReschedule {
		return a.run.Owner, nil
	}
	return "", nil
}

// selfID is the id of the daemon this server runs with, "" without one.
func (s *Server) selfID() string {
	if s.cfg.Daemon == nil {
		return ""
	}
	return s.cfg.Daemon.ID()
}

// locateLog finds where the log of attempt a is read. The log of an attempt this daemon ran,
// or that no daemon is known to have run, is this daemon's file (missing: errNoLog). Another
// daemon's log is read from that daemon while it is alive and advertises an address this host
// can reach; a request another daemon forwarded is never forwarded again, so two daemons that
// disagree about the holder cannot bounce a request between them. When the holder cannot be
// asked, a file of this state folder under the same name is served (two owner ids on one
// folder); else the answer says which host holds the log and why it cannot be read now.
func (s *Server) locateLog(ctx context.Context, a attemptRef, forwarded bool) (logHome, error) {
	path := s.LogPath(a.run, a.taskID, a.try)
	holder, err := s.logHolder(ctx, a)
	if err != nil {
		return logHome{}, err
	}
	self := s.selfID()
	if holder == "" || holder == self {
		if !fileExists(path) {
			return logHome{}, notFound("no log for %s", a)
		}
		return logHome{path: path, holder: holder}, nil
	}
	o, err := s.cfg.Store.GetOwner(ctx, holder)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return logHome{}, err
	}
	why := s.cannotAsk(ctx, a, holder, o, err == nil, forwarded)
	if why == nil {
		return logHome{remote: &o, holder: holder}, nil
	}
	if fileExists(path) {
		return logHome{path: path, holder: holder}, nil
	}
	return logHome{}, why
}

// cannotAsk says why the daemon holder (row o, when known) cannot be asked for the log of a;
// nil when it can.
func (s *Server) cannotAsk(ctx context.Context, a attemptRef, holder string, o store.Owner, known, forwarded bool) error {
	away := func(format string, args ...any) error {
		return &apiError{status: http.StatusServiceUnavailable, detail: fmt.Sprintf(format, args...)}
	}
	// Where the file is inside the holder's state folder: logs/<dag>/<run>/<task>/<try>.log.
	rel, err := filepath.Rel(s.cfg.StateDir, s.LogPath(a.run, a.taskID, a.try))
	if err != nil {
		rel = "logs"
	}
	switch {
	case forwarded:
		return notFound("no log for %s on daemon %s, which %s ran: this daemon does not forward a request "+
			"another daemon forwarded", a, orNone(s.selfID()), holder)
	case !known:
		return away("the log of %s was written by %s, which has no owner row any more (a dags test process that "+
			"ended, or an owner removed): it is %s in the state folder that process ran with", a, holder, rel)
	case !owners.Alive(o, s.now(), s.host, owners.AliveOn(s.cfg.Store.Path())):
		return away("the log of %s is on host %s (%s %s), which is gone since %s: it can be read again once "+
			"%s runs there again (%s in its state folder)", a, orUnknown(o.Host), ownerNoun(o), holder,
			o.Heartbeat.UTC().Format(time.RFC3339), holder, rel)
	case o.API == "" && o.Kind == vocab.OwnerTest:
		return away("the log of %s is on host %s, in the state folder of dags test process %s, which serves no "+
			"API (%s there)", a, orUnknown(o.Host), holder, rel)
	case o.API == "":
		return away("the log of %s is on host %s (daemon %s), which advertises no API address (it was started by "+
			"a poolflow without serve --advertise): restart it with this version, or read %s in its state folder",
			a, orUnknown(o.Host), holder, rel)
	case LoopbackURL(o.API) && o.Host != s.host:
		return away("the log of %s is on host %s (daemon %s), which advertises only a loopback address (%s) that "+
			"this host (%s) cannot reach: start it with serve --advertise host:port", a, orUnknown(o.Host), holder,
			o.API, orUnknown(s.host))
	}
	if self := s.selfID(); self != "" {
		me, err := s.cfg.Store.GetOwner(ctx, self)
		if err == nil && me.API == o.API {
			return &apiError{status: http.StatusBadGateway, detail: fmt.Sprintf("the log of %s is on daemon %s "+
				"(host %s), which advertises %s, this daemon's own address: give each daemon its own serve --advertise",
				a, holder, orUnknown(o.Host), o.API)}
		}
	}
	return nil
}

func ownerNoun(o store.Owner) string {
	if o.Kind == vocab.OwnerTest {
		return "dags test process"
	}
	return "daemon"
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
