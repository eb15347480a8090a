package webevents_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
	"github.com/cocrawl/cocrawl/webevents/storetest"
)

const crashEnv = "COCRAWL_CRASH_WRITER_DIR"

// crashEvent is the i-th event the child writes.
func crashEvent(i int) webevents.Event {
	return storetest.Ev(fmt.Sprintf("crash/%06d", i), webevents.Create, 800000000+int64(i), "me:1 Me", int64(i%3))
}

// TestMain lets the test binary act as the writer child of TestSIGKILL.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashWriter(dir)
		return
	}
	if dir := os.Getenv(fullDiskEnv); dir != "" {
		fullDiskWriter(dir)
		return
	}
	os.Exit(m.Run())
}

// crashWriter writes batches for ever, printing the index of the last event
// of each batch after Record returned: that is the acknowledgement.
func crashWriter(dir string) {
	s, err := webevents.OpenBadger(dir, webevents.BadgerOptions{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "id", s.ID())
	out.Flush()
	for i := 0; ; {
		// Alternate the two write paths; merges are large enough to commit
		// in several overlapping parts.
		merge := i%2000 == 0
		n := 50
		if merge {
			n = 2600
		}
		batch := make([]webevents.Event, 0, n)
		for range n {
			batch = append(batch, crashEvent(i))
			i++
		}
		if merge {
			if _, err := s.Merge(batch, nil); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
		} else if err := s.Record(batch); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Fprintln(out, "ack", i-1)
		out.Flush()
	}
}

func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a writer process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A reader keeps draining the child's output so it never blocks on the
	// pipe: the kill lands while it is writing.
	acks := make(chan int, 1024)
	var idBefore string
	go func() {
		defer close(acks)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "id" {
				idBefore = f[1]
				continue
			}
			if len(f) != 2 || f[0] != "ack" {
				t.Errorf("child: %s", sc.Text())
				return
			}
			n, _ := strconv.Atoi(f[1])
			acks <- n
		}
	}()
	acked := -1
	for n := range acks {
		acked = n
		if acked >= 20000 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for n := range acks { // acknowledgements written before the kill count too
		acked = n
	}
	_ = cmd.Wait()
	if acked < 0 {
		t.Fatal("child acknowledged nothing")
	}

	s, err := webevents.OpenBadger(dir, webevents.BadgerOptions{})
	if err != nil {
		t.Fatalf("store does not reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	// Offsets the killed writer served may be written again: the ID that
	// day-file ETags and generations carry must have changed.
	if idBefore == "" || s.ID() == idBefore {
		t.Errorf("store ID after an unclean stop %q, before %q: want a new generation", s.ID(), idBefore)
	}
	for i := 0; i <= acked; i++ {
		want := crashEvent(i)
		got, ok, err := s.Get(want.URL)
		if err != nil || !ok || got != want {
			t.Fatalf("acknowledged event %d lost: %+v %v %v", i, got, ok, err)
		}
	}
	// The log and the day infos agree: both were in the same commits.
	var logged int64
	for d := int64(0); d < 3; d++ {
		info, _, _ := s.DayInfo(storetest.Day0 + d)
		var n int64
		if err := s.ReadDay(storetest.Day0+d, 0, func(int64, webevents.Event) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != info.Records {
			t.Fatalf("day %d: %d log entries, info says %d", d, n, info.Records)
		}
		// The origin index, written behind the log, catches up with it:
		// every record of the site's, once.
		oi, _, err := s.OriginDayInfo(storetest.Day0+d, "http://site.example")
		var on int64
		if err == nil {
			err = s.ReadOriginDay(storetest.Day0+d, "http://site.example", 0, func(int64, webevents.Event) error { on++; return nil })
		}
		if err != nil || oi.Records != n || on != n || oi.Size != info.Size {
			t.Fatalf("day %d: the origin index holds %d records (info %+v, %v), the log %d (info %+v)", d, on, oi, err, n, info)
		}
		logged += n
	}
	if logged < int64(acked+1) {
		t.Fatalf("logged %d < acknowledged %d", logged, acked+1)
	}
	t.Logf("acknowledged %d events before SIGKILL, %d found after reopen", acked+1, logged)
}

const fullDiskEnv = "COCRAWL_FULL_DISK_WRITER_DIR"

// fullDiskWriter writes batches for ever into a store in dir, printing
// "ok N" after each stored batch and "refused" when the store refuses one
// for want of space; a SIGBUS would kill it instead.
func fullDiskWriter(dir string) {
	s, err := webevents.OpenBadger(dir, webevents.BadgerOptions{MemTableSize: 8 << 20})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		batch := make([]webevents.Event, 0, 500)
		for j := range 500 {
			e := crashEvent(i*500 + j)
			e.ETag = `"` + strings.Repeat("e", 400) + `"` // fill faster
			batch = append(batch, e)
		}
		err := s.Record(batch)
		switch {
		case err == nil:
			fmt.Fprintln(out, "ok", i)
		case errors.Is(err, webevents.ErrNoSpace):
			fmt.Fprintln(out, "refused")
			time.Sleep(50 * time.Millisecond)
		default:
			fmt.Fprintln(out, "error", err)
		}
		out.Flush()
	}
}
