package io.gdrkit.gdr.reg;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Times the NET MR cache by page count (C9): a cold registration (a miss), an exact hit, a contained hit and
 * the last deregistration. Prints a Markdown table of min/median/max over 5 runs, after warm-up rounds so the
 * numbers are for JIT-compiled code.
 *
 * <p>The registrar is a stand-in, and the output says so: gdr does not depend on the software NIC, so no real MR
 * is made. It does the work a registration does on the host side: it walks every page of the range in a real
 * {@link MemorySegment}, touches it (faulting it in, as pinning does) and records it in a page list; the
 * deregistration walks the list again and releases it.
 *
 * <p>Run: {@code java -cp gdr/target/classes io.gdrkit.gdr.reg.RegTiming}
 */
public final class RegTiming {
    private static final long PAGE = NetMrCache.DEFAULT_PAGE_SIZE;
    private static final int[] PAGE_COUNTS = {1, 16, 256, 4096};
    private static final int RUNS = 5;
    private static final int WARMUP = 200;

    private RegTiming() {
    }

    /** A registrar that touches and lists every page it "pins". */
    static final class PageTouchingRegistrar implements Registrar {
        private final MemorySegment memory;
        private final Map<Object, long[]> pinned = new IdentityHashMap<>();
        long checksum;

        PageTouchingRegistrar(final MemorySegment memory) {
            this.memory = memory;
        }

        @Override
        public Object register(final long addr, final long len) {
            final long offset = addr - memory.address();
            final int pages = (int) (len / PAGE);
            final long[] list = new long[pages];
            for (int i = 0; i < pages; i++) {
                final long pageOffset = offset + i * PAGE;
                final byte b = memory.get(ValueLayout.JAVA_BYTE, pageOffset);
                memory.set(ValueLayout.JAVA_BYTE, pageOffset, (byte) (b + 1));
                list[i] = addr + i * PAGE;
            }
            final Object mr = new Object();
            pinned.put(mr, list);
            return mr;
        }

        @Override
        public void deregister(final Object mr) {
            final long[] list = pinned.remove(mr);
            long sum = 0;
            for (final long page : list) {
                sum += memory.get(ValueLayout.JAVA_BYTE, page - memory.address());
            }
            checksum += sum;
        }
    }

    /** Runs the measurements and prints the table. */
    public static void main(final String[] args) {
        final int maxPages = PAGE_COUNTS[PAGE_COUNTS.length - 1];
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment memory = arena.allocate((maxPages + 1) * PAGE, PAGE);
            final PageTouchingRegistrar nic = new PageTouchingRegistrar(memory);
            final long base = memory.address();

            System.out.println("NET MR cache timing (gdrkit RegTiming), page size " + PAGE + " B, " + RUNS +
                " runs after " + WARMUP + " warm-up rounds over all sizes, times in microseconds.");
            System.out.println("Registrar: page-touching stand-in (touches and lists every page of a " +
                "MemorySegment); NOT a real MR on the software NIC, which gdr does not depend on.");
            System.out.println("JVM: " + System.getProperty("java.vm.name") + " " + System.getProperty("java.version") +
                ", " + Runtime.getRuntime().availableProcessors() + " CPUs");
            System.out.println();
            // Warm up over every page count first: warming each size only before measuring it leaves the small
            // sizes timed in the interpreter and makes the page loop look non-linear.
            for (int i = 0; i < WARMUP; i++) {
                for (final int pages : PAGE_COUNTS) {
                    measure(nic, base, pages);
                }
            }
            System.out.println("| pages | operation | min µs | median µs | max µs |");
            System.out.println("|------:|-----------|-------:|----------:|-------:|");
            for (final int pages : PAGE_COUNTS) {
                final long[][] samples = new long[4][RUNS];
                for (int run = 0; run < RUNS; run++) {
                    final long[] t = measure(nic, base, pages);
                    for (int op = 0; op < 4; op++) {
                        samples[op][run] = t[op];
                    }
                }
                final String[] names = {"cold register (miss)", "cache hit (exact)", "contained hit", "deregister (last ref)"};
                for (int op = 0; op < 4; op++) {
                    final long[] s = samples[op];
                    Arrays.sort(s);
                    System.out.printf("| %d | %s | %s | %s | %s |%n", pages, names[op], us(s[0]), us(s[RUNS / 2]),
                        us(s[RUNS - 1]));
                }
            }
            System.out.println();
            System.out.println("(checksum " + nic.checksum + ")");
        }
    }

    /** One run: {cold, hit, contained, deregister} in nanoseconds, each on a fresh cache. */
    private static long[] measure(final PageTouchingRegistrar nic, final long base, final int pages) {
        final NetMrCache cache = new NetMrCache(nic, PAGE);
        final long len = pages * PAGE;
        // A range strictly inside the first one: a quarter in, half as long, off the page boundaries.
        final long innerAddr = base + (pages / 4) * PAGE + 64;
        final long innerLen = Math.max(1, pages / 2) * PAGE - 128;

        long t0 = System.nanoTime();
        final Object mr = cache.register(base, len);
        final long cold = System.nanoTime() - t0;

        t0 = System.nanoTime();
        final Object hit = cache.register(base, len);
        final long exact = System.nanoTime() - t0;

        t0 = System.nanoTime();
        final Object inner = cache.register(innerAddr, innerLen);
        final long contained = System.nanoTime() - t0;

        if (hit != mr || inner != mr) {
            throw new IllegalStateException("expected cache hits, got new registrations");
        }
        cache.deregister(inner);
        cache.deregister(hit);
        t0 = System.nanoTime();
        cache.deregister(mr);
        final long dereg = System.nanoTime() - t0;
        return new long[] {cold, exact, contained, dereg};
    }

    private static String us(final long nanos) {
        return String.format("%.2f", nanos / 1000.0);
    }
}
