package openb

import (
	_ "github.com/berth-cluster/berth/placement/gpushare" // the policies replayed
)
