package dag

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goccy "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"go.yaml.in/yaml/v3"
)

// BenchmarkYAMLLibrary is the measure behind the choice of go.yaml.in/yaml/v3 (issue 22): the
// same file of n chained tasks read by goccy/go-yaml (its AST, then NodeToValue with strict
// options, the decoder the issue offered), by v3 into yaml.Node (what the reader walks), and
// by Parse as it is. Besides time and allocations it reports the peak of the heap in use while
// reading (sampled every millisecond, the heap before subtracted) and what stays live after,
// both per byte of YAML.
//
//	go test -run '^$' -bench YAMLLibrary -benchtime 3x ./dag/
func BenchmarkYAMLLibrary(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		data := genFile("chain", n)
		readers := []struct {
			name string
			read func() any
		}{
			{"goccy-NodeToValue", func() any {
				f, err := parser.ParseBytes(data, 0)
				if err != nil {
					b.Fatal(err)
				}
				var v map[string]any
				if err := goccy.NodeToValue(f.Docs[0].Body, &v, goccy.Strict()); err != nil {
					b.Fatal(err)
				}
				return []any{f, v}
			}},
			{"v3-Node", func() any {
				var doc yaml.Node
				if err := yaml.Unmarshal(data, &doc); err != nil {
					b.Fatal(err)
				}
				return &doc
			}},
			{"Parse", func() any {
				d, errs := Parse("chain.yaml", data, LoadOptions{})
				if len(errs) > 0 {
					b.Fatal(errs[0])
				}
				return d
			}},
		}
		for _, rd := range readers {
			b.Run(fmt.Sprintf("%s/%dk", rd.name, n/1000), func(b *testing.B) {
				var peak, live uint64
				b.ReportAllocs()
				for b.Loop() {
					p, l := heapPeak(rd.read)
					peak, live = max(peak, p), max(live, l)
				}
				b.ReportMetric(float64(peak)/float64(len(data)), "peak-B/B")
				b.ReportMetric(float64(live)/float64(len(data)), "live-B/B")
				b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			})
		}
	}
}

// heapPeak runs f and returns the highest heap in use while it ran and what it left live,
// both above the heap before.
func heapPeak(f func() any) (peak, live uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var top atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > top.Load() {
				top.Store(s.HeapAlloc)
			}
		}
	}()
	keep := f()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	top.Store(max(top.Load(), ms.HeapAlloc))
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(keep)
	return top.Load() - min(top.Load(), base), ms.HeapAlloc - min(ms.HeapAlloc, base)
}
