package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// yamlFiles and yamlTasks are issue 25's case: four DAG files of about 5.4 MB dropped into
// the DAGs folder at once.
const yamlFiles, yamlTasks = 4, 95_000

// yamlMemory is the memory a process takes for the DAG files it loads, per byte of YAML: its
// peak RSS above the same process's with no DAG file.
type yamlMemory struct {
	what        string
	base, peak  int64 // KiB
	yamlBytes   int64
	fileBytes   int64 // the largest file
	description string
}

func (m yamlMemory) perByte() float64 { return float64(m.peak-m.base) * 1024 / float64(m.yamlBytes) }

// writeYAMLFiles writes the four files: chains of `true` tasks under one default_args.
func writeYAMLFiles(dir string) (total, largest int64, err error) {
	for i := range yamlFiles {
		var b strings.Builder
		fmt.Fprintf(&b, "dag_id: big%d\ndefault_args:\n  retries: 1\ntasks:\n", i)
		for t := range yamlTasks {
			fmt.Fprintf(&b, "  - id: t%d\n    bash: \"true\"\n", t)
			if t > 0 {
				fmt.Fprintf(&b, "    depends_on: [t%d]\n", t-1)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("big%d.yaml", i)), []byte(b.String()), 0o644); err != nil {
			return 0, 0, err
		}
		total += int64(b.Len())
		largest = max(largest, int64(b.Len()))
	}
	return total, largest, nil
}

// measureYAMLMemory runs `dags validate` on the four files and on an empty folder, and a
// `serve` daemon into whose empty folder the four are copied at once.
func (b *bench) measureYAMLMemory() ([]yamlMemory, error) {
	proj := filepath.Join(b.dir, "yaml-memory")
	files, empty, dags := filepath.Join(proj, "files"), filepath.Join(proj, "empty"), filepath.Join(proj, "dags")
	for _, d := range []string{files, empty, dags} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	total, largest, err := writeYAMLFiles(files)
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(proj, "poolflow.yaml")
	if err := os.WriteFile(cfg, []byte("max_running: 8\n"), 0o644); err != nil {
		return nil, err
	}
	validate := func(dir string) (int64, error) {
		c := exec.Command(b.bin, "--config", cfg, "--dags", dir, "--state", filepath.Join(proj, "cli"), "dags", "validate")
		var out strings.Builder
		c.Stdout, c.Stderr = &out, &out
		res, err := timed(c)
		if err != nil {
			return 0, fmt.Errorf("dags validate: %w\n%s", err, out.String())
		}
		return res.rss, nil
	}
	v := yamlMemory{what: "dags validate", yamlBytes: total, fileBytes: largest}
	if v.base, err = validate(empty); err != nil {
		return nil, err
	}
	if v.peak, err = validate(files); err != nil {
		return nil, err
	}
	d, err := b.serveYAMLMemory(proj, cfg, files, dags)
	if err != nil {
		return nil, err
	}
	d.yamlBytes, d.fileBytes = total, largest
	return []yamlMemory{v, d}, nil
}

// serveYAMLMemory starts a daemon on an empty folder, copies the files in at once when it is
// up, and reads its RSS before and its high-water mark once it has loaded them.
func (b *bench) serveYAMLMemory(proj, cfg, files, dags string) (yamlMemory, error) {
	ctx := context.Background()
	target := "sqlite:" + filepath.Join(proj, "poolflow.db")
	lf, err := os.Create(filepath.Join(proj, "serve.log"))
	if err != nil {
		return yamlMemory{}, err
	}
	defer lf.Close()
	p := exec.Command(b.bin, "--config", cfg, "--dags", dags, "--state", filepath.Join(proj, "state"), "--store", target,
		"serve", "--listen", "127.0.0.1:0")
	p.Stdout, p.Stderr = lf, lf
	if err := p.Start(); err != nil {
		return yamlMemory{}, err
	}
	defer func() {
		_ = p.Process.Signal(os.Interrupt)
		_ = p.Wait()
	}()
	var st store.Store
	if err := waitFor(60*time.Second, "the daemon to start", func() (bool, error) {
		if st == nil {
			if st, err = store.Open(ctx, target, store.Options{}); err != nil {
				st = nil
				return false, nil
			}
		}
		os, err := st.ListOwners(ctx)
		for _, o := range os {
			if o.Kind == vocab.OwnerDaemon && o.LeaseUntil.After(time.Now()) {
				return true, nil
			}
		}
		return false, err
	}); err != nil {
		return yamlMemory{}, err
	}
	defer st.Close()
	time.Sleep(time.Second) // settled after its start
	m := yamlMemory{what: "serve, the files dropped in at once"}
	if m.base, err = procStatus(p.Process.Pid, "VmRSS"); err != nil {
		return m, err
	}
	names, err := filepath.Glob(filepath.Join(files, "*.yaml"))
	if err != nil {
		return m, err
	}
	for _, n := range names {
		// Copied under a dot name and renamed, as editors and deploy tools do: each appears whole.
		tmp := filepath.Join(dags, "."+filepath.Base(n))
		if err := copyFile(n, tmp); err != nil {
			return m, err
		}
		if err := os.Rename(tmp, filepath.Join(dags, filepath.Base(n))); err != nil {
			return m, err
		}
	}
	if err := waitFor(5*time.Minute, "the daemon to load the files", func() (bool, error) {
		states, err := st.ListDAGStates(ctx)
		return len(states) >= len(names), err
	}); err != nil {
		return m, err
	}
	m.peak, err = procStatus(p.Process.Pid, "VmHWM")
	return m, err
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// procStatus reads a KiB figure of /proc/PID/status.
func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func printYAMLMemory(out io.Writer, ms []yamlMemory) {
	if len(ms) == 0 {
		return
	}
	fmt.Fprintf(out, "\nmemory per byte of YAML: %d DAG files of %d chained tasks (%.1f MB each, %.1f MB in all), peak RSS\n",
		yamlFiles, yamlTasks, float64(ms[0].fileBytes)/1e6, float64(ms[0].yamlBytes)/1e6)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "process\twithout the files\tpeak\tabove\tbytes per byte of YAML\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%.0f MiB\t%.0f MiB\t%.0f MiB\t%.1f\t\n", m.what, float64(m.base)/1024, float64(m.peak)/1024,
			float64(m.peak-m.base)/1024, m.perByte())
	}
	tw.Flush()
}
