package executor

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// fullPollEvery is how often the DAG folder is listed and stat'ed when file notifications
// work: a safety net for changes they cannot see (network file systems). Listing a folder of
// 10,000 files costs about 50 ms, too much to do twice a second for nothing.
const fullPollEvery = 10 * time.Second

// watch keeps the registry up to date until ctx ends, calling changed after every refresh that
// changed something. DAG files and poolflow.yaml are watched with file notifications (inotify),
// so a change is seen at once; poolflow.yaml is also stat'ed every period, and the folder listed
// every fullPollEvery (every period when notifications are unavailable). It also serves the
// loop's refresh requests and stored-pool offers.
func (r *registry) watch(ctx context.Context, every time.Duration, changed func()) {
	r.watching.Store(true)
	defer r.watching.Store(false)
	events, stop := r.notifications()
	defer stop()
	full := every
	if events != nil {
		full = max(fullPollEvery, every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastFull := time.Now()
	refresh := func(req *refreshReq) {
		if !req.skipDir {
			lastFull = time.Now()
		}
		if r.refresh(req) {
			changed()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
			drainSignals(events) // one refresh covers a burst of writes
			refresh(&refreshReq{})
		case <-t.C:
			refresh(&refreshReq{skipDir: time.Since(lastFull) < full})
		case req := <-r.reqs:
			req.changedSome = r.refresh(req)
			close(req.done)
			if req.changedSome {
				changed()
			}
		case ps := <-r.offers:
			refresh(&refreshReq{stored: ps, haveStored: true, skipDir: true})
		}
	}
}

func drainSignals(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// notifications sends a value when a DAG file or poolflow.yaml may have changed; nil when file
// notifications are not available here (the watcher then polls).
func (r *registry) notifications() (<-chan struct{}, func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Info("file notifications unavailable; polling the DAG folder", "err", err)
		return nil, func() {}
	}
	var dirs []string
	cfgFile, dagDir := "", ""
	if eff, _ := r.effective(); eff.Settings.File != "" {
		cfgFile, _ = filepath.Abs(eff.Settings.File)
		dirs = append(dirs, filepath.Dir(cfgFile)) // editors replace the file: watch its folder
	}
	if r.dir != "" {
		dagDir, _ = filepath.Abs(r.dir)
		dirs = append(dirs, dagDir)
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			r.log.Info("file notifications unavailable; polling the DAG folder", "dir", d, "err", err)
			w.Close()
			return nil, func() {}
		}
	}
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				abs, _ := filepath.Abs(ev.Name)
				dagFile := filepath.Dir(abs) == dagDir && (strings.HasSuffix(abs, ".yaml") || strings.HasSuffix(abs, ".yml"))
				if dagFile || abs == cfgFile {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return out, func() {
		w.Close()
		<-done
	}
}
