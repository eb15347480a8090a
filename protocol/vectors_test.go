package protocol

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// vectorNow is the clock of every vector in spec/testdata (see its README).
var vectorNow = time.Unix(1704067200, 0)

type datVector struct {
	Records []webevents.Event `json:"records"`
	Errors  []struct {
		Line   int    `json:"line"`
		Reason string `json:"reason"`
	} `json:"errors"`
}

// decodeAll decodes a whole file, collecting records and record errors.
func decodeAll(t testing.TB, r io.Reader, o DatOptions) ([]webevents.Event, []*RecordError, error) {
	d := NewDatReader(r, o)
	var evs []webevents.Event
	var bad []*RecordError
	for {
		e, err := d.Next()
		var re *RecordError
		switch {
		case err == nil:
			evs = append(evs, e)
		case errors.As(err, &re):
			bad = append(bad, re)
		case err == io.EOF:
			return evs, bad, nil
		default:
			return evs, bad, err
		}
	}
}

func TestDatVectors(t *testing.T) {
	files, _ := filepath.Glob("../spec/testdata/dat/*.dat")
	files = append(files, "../spec/testdata/thesis-example.dat")
	if len(files) < 10 {
		t.Fatalf("only %d vectors found", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := readJSON[datVector](t, strings.TrimSuffix(f, ".dat")+".json", f+".json")
			in, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			evs, bad, err := decodeAll(t, in, DatOptions{Now: func() time.Time { return vectorNow }})
			if err != nil {
				t.Fatalf("fatal error: %v", err)
			}
			got := append([]webevents.Event{}, evs...)
			if want.Records == nil {
				want.Records = []webevents.Event{}
			}
			if !reflect.DeepEqual(got, want.Records) {
				t.Errorf("records:\n got %+v\nwant %+v", got, want.Records)
			}
			if len(bad) != len(want.Errors) {
				t.Fatalf("errors: got %v, want %+v", bad, want.Errors)
			}
			for i, b := range bad {
				if b.Line != want.Errors[i].Line || reason(b) != want.Errors[i].Reason {
					t.Errorf("error %d: got line %d %s (%v), want line %d %s", i, b.Line, reason(b), b, want.Errors[i].Line, want.Errors[i].Reason)
				}
			}
		})
	}
}

type shrVector struct {
	Error      string   `json:"error"`
	Version    string   `json:"version"`
	Crawler    string   `json:"crawler"`
	Contact    string   `json:"contact"`
	Special    []string `json:"special"`
	Repository string   `json:"repository"`
	Probe      string   `json:"probe"`
}

func TestShareControlVectors(t *testing.T) {
	files, _ := filepath.Glob("../spec/testdata/shr/*.shr")
	files = append(files, "../spec/testdata/thesis-robots.shr")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := readJSON[shrVector](t, strings.TrimSuffix(f, ".shr")+".json", f+".json")
			in, _ := os.Open(f)
			defer in.Close()
			sc, err := ParseShareControl(in, Limits{})
			if want.Error != "" {
				if err == nil || reason(err) != want.Error {
					t.Fatalf("got %v (%s), want error %s", err, reason(err), want.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want.Version != "" && (sc.Version != want.Version || sc.Crawler != want.Crawler || sc.Contact != want.Contact ||
				!reflect.DeepEqual(sc.Special, want.Special) || sc.Repository != want.Repository) {
				t.Fatalf("got %+v, want %+v", sc, want)
			}
			if want.Probe != "" && sc.Probe != want.Probe {
				t.Fatalf("probe %q, want %q", sc.Probe, want.Probe)
			}
			// What we write reads back the same.
			var b strings.Builder
			sc.WriteTo(&b)
			again, err := ParseShareControl(strings.NewReader(b.String()), Limits{})
			if err != nil || !reflect.DeepEqual(again, sc) {
				t.Fatalf("round trip: %+v %v", again, err)
			}
		})
	}
}

func TestThesisControlChecksClean(t *testing.T) {
	in, _ := os.Open("../spec/testdata/thesis-robots.shr")
	defer in.Close()
	sc, err := ParseShareControl(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if v := sc.Check(nil); len(v) != 0 {
		t.Fatalf("thesis example violates: %v", v)
	}
	u, _ := sc.RepositoryURL(mustURL("http://plg2.math.uwaterloo.ca:33433/robots.shr"))
	if u.String() != "http://plg2.math.uwaterloo.ca/share-dir/" {
		t.Fatalf("repository = %s", u)
	}
}

func readJSON[T any](t *testing.T, paths ...string) T {
	t.Helper()
	var v T
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return v
	}
	t.Fatalf("no expectation file among %v", paths)
	return v
}
