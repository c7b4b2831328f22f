import numpy as np
import numpyro
import numpyro.distributions as dist

# NumPy constants: they follow the model's float precision (float64 once x64 is on)
WEIGHTS = np.array([0.2, 0.3, 0.1, 0.4])
LOCATIONS = np.array([-2.0, 0.0, 3.2, 2.5])
SCALES = np.array([1.2, 1.0, 5.0, 2.8])


def gaussian_mixture_target():
    numpyro.sample("x", dist.MixtureSameFamily(dist.Categorical(probs=WEIGHTS), dist.Normal(LOCATIONS, SCALES)))
