"""The two-operand Einsum plan the cpu and gpu targets share, against NumPy's einsum."""
import numpy as np
import pytest

from compiler.targets.einsum_plan import plan_einsum


@pytest.mark.parametrize("eq, a, b", [("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("ij,jk->ki", (3, 4), (4, 5)),
                                      ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)),
                                      ("ik,jk->ji", (3, 4), (5, 4)), ("i,j->ij", (3,), (4,))])
def test_the_plan_computes_numpys_einsum(eq, a, b):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(a), rng.standard_normal(b)
    p = plan_einsum(eq)
    xa, yb = x.transpose(p.perm_a), y.transpose(p.perm_b)
    nb, na, nc = len(p.batch), len(p.free_a), len(p.contract)
    bshape, ashape, cshape = xa.shape[:nb], xa.shape[nb:nb + na], xa.shape[nb + na:]
    bfshape = yb.shape[nb + nc:]
    m, k, n = (int(np.prod(s)) for s in (ashape, cshape, bfshape))
    r = np.matmul(xa.reshape(bshape + (m, k)), yb.reshape(bshape + (k, n))).reshape(bshape + ashape + bfshape)
    np.testing.assert_allclose(r.transpose(p.perm_out), np.einsum(eq, x, y), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eq", ["ii,ij->j", "ij,jk", "...ij,jk->...ik", "ij,jk,kl->il", "ijk,jl->il"])
def test_equations_that_are_no_plain_product_have_no_plan(eq):
    assert plan_einsum(eq) is None
