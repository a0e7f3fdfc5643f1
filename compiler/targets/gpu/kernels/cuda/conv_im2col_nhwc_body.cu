/* cupy.ElementwiseKernel operation body (element i) */
long long kk = (long long)KH * KW * C;
long long row = i / kk, k = i - row * kk;
int c = (int)(k % C);
long long t = k / C;
int kx = (int)(t % KW), ky = (int)(t / KW);
long long ox = row % OW, rest = row / OW;
long long oy = rest % OH, n = rest / OH;
long long iy = oy * SH - PT + (long long)ky * DH;
long long ix = ox * SW - PL + (long long)kx * DW;
col = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? x[((n * H + iy) * W + ix) * C + c] : (T)0;
