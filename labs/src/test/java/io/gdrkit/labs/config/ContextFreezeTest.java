/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.labs.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.gdrkit.comm.CollContext;
import io.gdrkit.comm.CommConfig;
import io.gdrkit.comm.Fabric;
import io.gdrkit.comm.WorldContext;
import io.gdrkit.comm.bootstrap.BootstrapContext;
import io.gdrkit.comm.bootstrap.UniqueId;
import io.gdrkit.comm.transport.IbTransportContext;
import io.gdrkit.comm.transport.SocketTransportContext;
import io.gdrkit.core.config.ContextFreeze;
import io.gdrkit.core.config.SettingsReader;
import io.gdrkit.gdr.gate.NcclSettings;
import io.gdrkit.gdr.gate.NetCaps;
import io.gdrkit.gdr.net.NetNic;
import io.gdrkit.shmem.ShmemContext;
import io.gdrkit.softnic.SoftNicContext;
import io.gdrkit.softnic.SoftNicDriver;
import io.gdrkit.softnic.fabric.TcpFabricContext;
import io.gdrkit.verbs.VerbsContext;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every settings Context freezes at {@code conclude()} through {@link ContextFreeze}: each of its public setters then
 * throws an {@link IllegalStateException} naming the Context and the setter, and so does a second {@code conclude()}.
 */
class ContextFreezeTest {
    private static SoftNicDriver driver;
    private static VerbsContext device;
    private static NetNic nic;

    @BeforeAll
    static void nic() {
        driver = SoftNicDriver.launch(new SoftNicContext().properties(Map.of()));
        device = driver.addDevice("freeze0").open();
        nic = new NetNic(0, device, NetCaps.probe(0, device, null));
    }

    @AfterAll
    static void close() throws Exception {
        nic.close();
        device.close();
        driver.close();
    }

    /** One settings Context: a fresh one ready to conclude, how to conclude it, and one setter to try. */
    record Case(String name, Class<?> type, Supplier<Object> fresh, Function<Object, Object> conclude,
                Function<Object, Object> setter, String setterName) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Arguments> contexts() {
        final SettingsReader none = SettingsReader.ofEnv(Map.of());
        return Stream.of(
            new Case("SoftNicContext", SoftNicContext.class, () -> new SoftNicContext().properties(Map.of()),
                c -> ((SoftNicContext) c).conclude(), c -> ((SoftNicContext) c).window(8), "window"),
            new Case("TcpFabricContext", TcpFabricContext.class, () -> new TcpFabricContext().properties(Map.of()),
                c -> ((TcpFabricContext) c).conclude(), c -> ((TcpFabricContext) c).sendBuffer(0), "sendBuffer"),
            new Case("NcclSettings.Context", NcclSettings.Context.class,
                () -> new NcclSettings.Context().reader(none), c -> ((NcclSettings.Context) c).conclude(),
                c -> ((NcclSettings.Context) c).override("NCCL_NET_GDR_READ", "1"), "override"),
            new Case("CollContext", CollContext.class, () -> new CollContext().settings(none),
                c -> ((CollContext) c).conclude(), c -> ((CollContext) c).steps(4), "steps"),
            new Case("IbTransportContext", IbTransportContext.class,
                () -> new IbTransportContext().nic(nic).settings(none), c -> ((IbTransportContext) c).conclude(),
                c -> ((IbTransportContext) c).qpsPerConnection(2), "qpsPerConnection"),
            new Case("SocketTransportContext", SocketTransportContext.class,
                () -> new SocketTransportContext().settings(none), c -> ((SocketTransportContext) c).conclude(),
                c -> ((SocketTransportContext) c).nThreads(2), "nThreads"),
            new Case("BootstrapContext", BootstrapContext.class, () -> new BootstrapContext()
                .id(new UniqueId("127.0.0.1", 4000, 0x0123456789abcdefL)).rank(0).nranks(2),
                c -> ((BootstrapContext) c).conclude(), c -> ((BootstrapContext) c).rank(1), "rank"),
            new Case("ShmemContext", ShmemContext.class, ShmemContext::new, c -> ((ShmemContext) c).conclude(),
                c -> ((ShmemContext) c).nPes(4), "nPes"),
            new Case("WorldContext", WorldContext.class, () -> new WorldContext().fabric(Fabric.SHM).settings(none),
                c -> ((WorldContext) c).conclude(), c -> ((WorldContext) c).gpu("sim:h200"), "gpu"),
            new Case("CommConfig", CommConfig.class, () -> new CommConfig()
                .id(new UniqueId("127.0.0.1", 4000, 0x0123456789abcdefL)).rank(0).nranks(1).fabric(Fabric.SHM)
                .settings(none), c -> ((CommConfig) c).conclude(), c -> ((CommConfig) c).rank(0), "rank"))
            .map(c -> Arguments.of(c));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("contexts")
    void aSetterAfterConcludeThrowsNamingTheContextAndTheSetter(final Case c) {
        final Object ctx = c.fresh().get();
        c.setter().apply(ctx); // before conclude(): allowed
        assertFalse(concluded(ctx), c.name());
        c.conclude().apply(ctx);
        assertTrue(concluded(ctx), c.name());
        final IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.setter().apply(ctx));
        assertEquals(c.name() + " is concluded: " + c.setterName() + "(...) is refused; configure a new " + c.name(),
            e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("contexts")
    void aSecondConcludeThrows(final Case c) {
        final Object ctx = c.fresh().get();
        c.conclude().apply(ctx);
        final IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.conclude().apply(ctx));
        assertEquals(c.name() + " is already concluded: conclude() runs once per context", e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("contexts")
    void everyPublicSetterIsRefusedAfterConclude(final Case c) throws IllegalAccessException {
        final Object ctx = c.fresh().get();
        c.conclude().apply(ctx);
        final List<String> setters = new ArrayList<>();
        final Method[] methods = c.type().getMethods();
        Arrays.sort(methods, Comparator.comparing(Method::toString));
        for (final Method m : methods) {
            if (Modifier.isStatic(m.getModifiers()) || m.getReturnType() != c.type() || m.getParameterCount() == 0) {
                continue;
            }
            setters.add(m.getName());
            try {
                m.invoke(ctx, Arrays.stream(m.getParameterTypes()).map(ContextFreezeTest::sample).toArray());
                fail(c.name() + "." + m.getName() + " was accepted after conclude()");
            } catch (final InvocationTargetException e) {
                assertInstanceOf(IllegalStateException.class, e.getCause(), c.name() + "." + m.getName());
                assertEquals(c.name() + " is concluded: " + m.getName() + "(...) is refused; configure a new "
                    + c.name(), e.getCause().getMessage());
            }
        }
        assertTrue(setters.contains(c.setterName()), c.name() + " setters found: " + setters);
    }

    @Test
    void theGuardRefusesReadingBeforeConcludeAndLeavesAFailedConcludeOpen() {
        final ContextFreeze f = new ContextFreeze("SomeContext");
        assertEquals("SomeContext is not concluded: conclude() it before reading its values", assertThrows(
            IllegalStateException.class, () -> f.requireConcluded("reading its values")).getMessage());
        f.set("anything");
        f.checkConclude();
        f.checkConclude(); // a conclude() that failed validation never called concluded(): still open
        f.concluded();
        assertTrue(f.isConcluded());
        f.requireConcluded("reading its values");
        // a Context whose conclude() fails stays open: it may be corrected and concluded
        final CollContext coll = new CollContext().settings(SettingsReader.ofEnv(Map.of())).steps(0);
        assertEquals("NCCL_STEPS=0 is not an integer in [1, 32]",
            assertThrows(IllegalArgumentException.class, coll::conclude).getMessage());
        assertFalse(coll.isConcluded());
    }

    private static Object sample(final Class<?> t) {
        if (t == int.class) {
            return 1;
        }
        if (t == long.class) {
            return 1L;
        }
        if (t == boolean.class) {
            return true;
        }
        if (t == double.class) {
            return 0.5;
        }
        if (t == String.class) {
            return "x";
        }
        if (t == Duration.class) {
            return Duration.ofSeconds(1);
        }
        if (t == InetAddress.class) {
            return InetAddress.getLoopbackAddress();
        }
        if (t == Map.class) {
            return Map.of();
        }
        if (t.isEnum()) {
            return t.getEnumConstants()[0];
        }
        return null;
    }

    /** {@code isConcluded()}, or {@code concluded()} where the Context names its query so. */
    private static boolean concluded(final Object ctx) {
        for (final String query : List.of("isConcluded", "concluded")) {
            try {
                return (Boolean) ctx.getClass().getMethod(query).invoke(ctx);
            } catch (final NoSuchMethodException e) {
                // the other name
            } catch (final ReflectiveOperationException e) {
                throw new AssertionError(ctx.getClass() + "." + query + "()", e);
            }
        }
        throw new AssertionError(ctx.getClass() + " says nowhere whether it is concluded");
    }
}
