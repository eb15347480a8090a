//go:build !unix

package fpmap

// mapAnon is nil where there is no mmap: segments stay in the heap.
func mapAnon(int) []byte { return nil }

func release([]byte) {}
