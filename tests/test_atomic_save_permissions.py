"""atomic_save leaves a file with the permissions torch.save would give it, not a temporary file's."""
import os
import stat

import pytest
import torch

from stepbystep.serialization import atomic_save


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_saved_file_has_the_permissions_the_umask_gives(tmp_path, umask):
    old = os.umask(umask)
    try:
        atomic_save({"w": torch.ones(2)}, tmp_path / "ours.pt")
        torch.save({"w": torch.ones(2)}, tmp_path / "torch.pt")
    finally:
        os.umask(old)
    ours = stat.S_IMODE((tmp_path / "ours.pt").stat().st_mode)
    theirs = stat.S_IMODE((tmp_path / "torch.pt").stat().st_mode)
    assert ours == theirs == 0o666 & ~umask
    assert torch.load(tmp_path / "ours.pt")["w"].tolist() == [1.0, 1.0]
