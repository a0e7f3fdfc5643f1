/* cupy.ElementwiseKernel operation body (element i) */
T v = y;
if (flags & 1) v += b[i % K];
if (flags & 2) v += r[i];
if ((flags & 4) && v < (T)0) v = (T)0;   /* NaN stays NaN, as NumPy's maximum keeps it */
y = v;
