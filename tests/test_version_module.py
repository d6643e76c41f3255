"""numdiff.version has torch.version's fields (pytorch/examples' FSDP prints torch.version.cuda)."""

import numdiff


def test_version_module_has_pytorchs_fields():
    assert numdiff.version.__version__ == numdiff.__version__
    assert numdiff.version.cuda is None and numdiff.version.hip is None
    assert sorted(dir(numdiff.version)) == ["cuda", "debug", "git_version", "hip"]
