"""``icetide demo``: the seed system on one machine with no configuration."""
