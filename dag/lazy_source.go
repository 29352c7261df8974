package dag

import "sync"

// lazySource is a DAG's sourceMap, or, for a file that decoded without an error, the file's
// bytes to decode again the first time a check needs a position. A clean DAG's checks only
// ask for positions to report an error, and a loaded DAG lives as long as its file is
// unchanged: at 100,000 chained tasks the map is about 85 MB, the bytes 5.7 MB.
type lazySource struct {
	file  string
	clean bool // no field failed to decode: isBad is false everywhere, nothing to build

	once sync.Once
	data []byte
	m    *sourceMap
}

// get returns the sourceMap, decoding the bytes again, mapped, the first time. Decoding is
// deterministic, so the rebuilt map has the same task indexes as the DAG.
func (l *lazySource) get() *sourceMap {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		if l.m == nil && l.data != nil {
			if d, _ := decodeBig(l.file, l.data, true); d != nil {
				l.m = d.src.m
			}
			l.data = nil
		}
	})
	return l.m
}

func (l *lazySource) isBad(task int, path string) bool {
	if l == nil || l.clean {
		return false
	}
	return l.get().isBad(task, path)
}
