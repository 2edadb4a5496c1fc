package psrbeam

import (
	// Beam's local and object-store filesystems for shards and results.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	// The runners selectable by name.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
)
