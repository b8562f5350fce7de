/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.core.auth;

import io.gdrkit.core.config.CoreConfiguration;
import io.gdrkit.core.config.SettingsReader;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A shared secret that peers prove they know before a listener uses anything they send (CM requests, TCP fabric
 * hellos). The listener sends a fresh random {@link #nonce() nonce}; the peer answers with
 * HMAC-SHA256(secret, nonce || what it sends); the listener recomputes it. The secret itself never crosses the
 * wire, and an answer is useless for any other nonce (no replay). Nothing is encrypted: the token authenticates,
 * it does not hide traffic (see docs/SECURITY.md).
 *
 * <p>Set by {@code --token}, the environment variable {@code GDRKIT_TOKEN} or the property {@code gdrkit.token} (a launcher
 * sets the environment variable for the ranks it starts). {@link #NONE}: no check, any peer is accepted.
 */
public final class Token {
    /** Environment variable a launcher sets for its ranks. */
    public static final String ENV = CoreConfiguration.TOKEN_ENV.name();
    /** System property (tests, or an embedding application). */
    public static final String PROPERTY = CoreConfiguration.TOKEN.name();
    /** Bytes of a nonce. */
    public static final int NONCE_LENGTH = 16;
    /** Bytes of an answer (HMAC-SHA256). */
    public static final int MAC_LENGTH = 32;
    /** No token: every peer is accepted (the default; listeners then bind loopback only). */
    public static final Token NONE = new Token(null);

    private static final SecureRandom RANDOM = new SecureRandom();
    private static volatile Token process;

    private final byte[] secret;

    private Token(final byte[] secret) {
        this.secret = secret;
    }

    /** A token from its text; blank text means {@link #NONE}. */
    public static Token of(final String text) {
        if (text == null || text.isBlank()) {
            return NONE;
        }
        if (text.length() < 8) {
            throw new IllegalArgumentException("a token must have at least 8 characters (got " + text.length()
                + ")");
        }
        return new Token(text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The process's token: {@link CoreConfiguration#TOKEN} if set, else {@link CoreConfiguration#TOKEN_ENV}, else {@link #NONE}. Read once, in this
     * one place.
     */
    public static Token fromProcess() {
        Token t = process;
        if (t == null) {
            final SettingsReader settings = SettingsReader.ofProcess();
            final String p = CoreConfiguration.TOKEN.read(settings).value();
            t = of(p.isBlank() ? CoreConfiguration.TOKEN_ENV.read(settings).value() : p);
            process = t;
        }
        return t;
    }

    /** Whether a secret is set (peers must then prove they know it). */
    public boolean isSet() {
        return secret != null;
    }

    /** A fresh random nonce for one handshake. */
    public static byte[] nonce() {
        final byte[] n = new byte[NONCE_LENGTH];
        RANDOM.nextBytes(n);
        return n;
    }

    /** HMAC-SHA256(secret, nonce || parts...); all zeros when no secret is set. */
    public byte[] answer(final byte[] nonce, final byte[]... parts) {
        if (secret == null) {
            return new byte[MAC_LENGTH];
        }
        try {
            final Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(nonce);
            for (final byte[] p : parts) {
                mac.update(p);
            }
            return mac.doFinal();
        } catch (final GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    /** Whether {@code answer} proves the secret for {@code nonce} and {@code parts} (always true without a secret). */
    public boolean verify(final byte[] answer, final byte[] nonce, final byte[]... parts) {
        if (secret == null) {
            return true;
        }
        return answer != null && MessageDigest.isEqual(answer, answer(nonce, parts));
    }

    @Override
    public String toString() {
        return secret == null ? "no token" : "token (" + secret.length + " bytes, not shown)";
    }
}
