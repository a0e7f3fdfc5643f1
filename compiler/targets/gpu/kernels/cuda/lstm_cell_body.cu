/* cupy.ElementwiseKernel operation body (element i) */
long long b = i / H, j = i % H, base = b * 4 * H;
float gi = (float)g[base + j], go = (float)g[base + H + j];
float gf = (float)g[base + 2 * H + j], gc = (float)g[base + 3 * H + j];
float ig = 1.f / (1.f + expf(-gi)), og = 1.f / (1.f + expf(-go)), fg = 1.f / (1.f + expf(-gf));
float c = fg * (float)c_prev + ig * tanhf(gc);
c_out = c;
h_out = og * tanhf(c);
