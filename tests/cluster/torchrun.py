#!/usr/bin/env python3
"""torchrun, from the torch this python3 has. Debian's torch 1.13 cannot parse its own default
--redirects/--tee ("0") on Python 3.11, whose enum no longer lists an IntFlag's zero member:
Std.from_str("0") returns None and torchrun stops with AttributeError. This wrapper mends that one
function and then runs torchrun's own main(); everything else is torchrun's."""
import re
import sys

from torch.distributed.elastic.multiprocessing import api

_from_str = api.Std.from_str.__func__
api.Std.from_str = classmethod(lambda cls, vm: cls(int(vm)) if re.fullmatch(r"\d", vm) else _from_str(cls, vm))

from torch.distributed.run import main  # noqa: E402

sys.exit(main())
