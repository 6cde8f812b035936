package bench

import (
	"os"
	"testing"

	"github.com/tenurekv/tenure/internal/proccluster"
)

// TestMain removes the tenure binary the runs build (proccluster.BuildTenure).
func TestMain(m *testing.M) { os.Exit(proccluster.Main(m)) }
