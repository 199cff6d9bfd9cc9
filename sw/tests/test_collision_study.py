"""The "same bucket?" attack study (fpq.collision_study) at a small scale: the linear attack
builds a colliding set from the plain Toeplitz hash in about j * v_max probes and finds
nothing against the mixed hash with several times that budget."""
import pytest

from fpq.collision_study import Oracle, linear_attack, main


@pytest.mark.parametrize("seed", [1, 2])
def test_linear_attack_builds_a_colliding_set_from_the_plain_hash(seed):
    oracle = Oracle(1024, mixed=False, seed=seed)
    found, probes, share = linear_attack(oracle, 8, budget=200_000, seed=seed)
    # 8 differences, each kept by a random difference with probability 1/1024
    assert len(found) == 8 and probes < 8 * 1024 * 4
    assert share == 1.0           # v_max a power of two: the whole span in one bucket
    assert oracle.probes == probes


@pytest.mark.parametrize("seed", [1, 2])
def test_linear_attack_finds_nothing_against_the_mixed_hash(seed):
    oracle = Oracle(1024, mixed=True, seed=seed)
    found, probes, share = linear_attack(oracle, 8, budget=8 * 1024 * 12, seed=seed)
    assert found == [] and probes >= 8 * 1024 * 12 and share is None


def test_bad_arguments_are_refused_naming_them(capsys):
    for argv, text in ((["--v-max", "1"], "--v-max: 1 is out of range [2, 65536]"),
                       (["--dims", "0"], "--dims: 0 is out of range [1, 64]"),
                       (["--budget", "nan"], "--budget: nan is out of range [1, 1e9]")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and text in capsys.readouterr().err
